// @ts-check
// The signing thread of server/security/jwt-signer.ts: keeps the private keys it is sent by kid, and
// signs each batch of { kid, header, payload } with jose, answering one { jwt } or { error } per
// request, in order. Served through server/background/thread-side.ts. Plain JavaScript (type-checked
// through JSDoc), so it loads the same under `node --import tsx` and under vitest.
import { SignJWT } from "jose";
import { serveThread } from "../background/thread-side.ts";

/** @type {Map<string, import("jose").CryptoKey>} */
const keys = new Map();

/** @param {import("./jwt-signer.ts").SignRequest} request */
async function signOne({ kid, header, payload }) {
  try {
    const key = keys.get(kid);
    if (!key) throw new Error(`no key ${kid}`);
    return { jwt: await new SignJWT(payload).setProtectedHeader(header).sign(key) };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

serveThread({
  /**
   * @param {import("./jwt-signer.ts").SignBatch} batch
   * @returns {Promise<import("./jwt-signer.ts").SignAnswers>}
   */
  async handle({ keys: added, requests }) {
    for (const { kid, privateKey } of added) keys.set(kid, privateKey);
    return Promise.all(requests.map(signOne));
  },
});
