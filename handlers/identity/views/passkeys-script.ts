/**
 * The passkey pages' one script (X-ID-PK-7): web/passkeys/main.ts and `@simplewebauthn/browser`,
 * bundled by esbuild when the service starts (as the dashboard's, views/dashboard.ts) and kept.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

let bundle: Promise<string> | undefined;

export function passkeysScript(): Promise<string> {
  bundle ??= build({
    entryPoints: [fileURLToPath(new URL("../../../web/passkeys/main.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    charset: "utf8",
    legalComments: "none",
    logLevel: "silent",
  }).then((result) => result.outputFiles[0]!.text);
  // A failed build is not kept: the next request tries again.
  bundle.catch(() => (bundle = undefined));
  return bundle;
}
