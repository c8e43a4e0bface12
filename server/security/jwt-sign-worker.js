// @ts-check
// The signing thread of server/security/jwt-signer.ts: keeps the private keys it is sent by kid,
// signs each batch of { id, kid, header, payload } with jose, and answers with one batch of
// { id, jwt } or { id, error }. Plain JavaScript (type-checked through JSDoc), so it loads the same
// under `node --import tsx` and under vitest.
import { parentPort } from "node:worker_threads";
import { SignJWT } from "jose";

/** @typedef {{ id: number, kid: string, header: import("jose").JWTHeaderParameters, payload: import("jose").JWTPayload }} Request */
/** @typedef {{ keys: Array<{ kid: string, privateKey: import("jose").CryptoKey }>, requests: Request[] }} Batch */

if (!parentPort) throw new Error("jwt-sign-worker.js runs as a worker thread of server/security/jwt-signer.ts");
const port = parentPort;

/** @type {Map<string, import("jose").CryptoKey>} */
const keys = new Map();

/** @param {Request} request */
async function signOne({ id, kid, header, payload }) {
  try {
    const key = keys.get(kid);
    if (!key) throw new Error(`no key ${kid}`);
    return { id, jwt: await new SignJWT(payload).setProtectedHeader(header).sign(key) };
  } catch (err) {
    return { id, error: err instanceof Error ? err.message : String(err) };
  }
}

port.on("message", async (/** @type {Batch} */ { keys: added, requests }) => {
  for (const { kid, privateKey } of added) keys.set(kid, privateKey);
  port.postMessage(await Promise.all(requests.map(signOne)));
});
