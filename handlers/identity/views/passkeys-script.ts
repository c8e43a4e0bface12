/**
 * The passkey pages' one script (X-ID-PK-7): web/passkeys/main.ts and `@simplewebauthn/browser`,
 * bundled when the service starts (as the dashboard's, views/dashboard.ts) and kept.
 */
import { browserBundle } from "./browser-bundle.ts";

export const passkeysScript = browserBundle(new URL("../../../web/passkeys/main.ts", import.meta.url));
