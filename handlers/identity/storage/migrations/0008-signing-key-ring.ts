/**
 * Signing keys an operator can rotate (X-ID-KEY-1): the one key per purpose becomes a ring of
 * keys with publication and activation times (server/keys/store.ts).
 */
export { keyRingMigration as signingKeyRing } from "../../../../server/keys/store.ts";
