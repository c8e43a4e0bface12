// The signing thread of server/security/jwt-signer.ts: keeps the private keys it is sent by kid,
// signs each batch of { id, kid, header, payload } with jose, and answers with one batch of
// { id, jwt } or { id, error }. Plain JavaScript, so it loads the same under `node --import tsx`
// and under vitest.
import { parentPort } from "node:worker_threads";
import { SignJWT } from "jose";

const keys = new Map();

async function signOne({ id, kid, header, payload }) {
  try {
    const key = keys.get(kid);
    if (!key) throw new Error(`no key ${kid}`);
    return { id, jwt: await new SignJWT(payload).setProtectedHeader(header).sign(key) };
  } catch (err) {
    return { id, error: err instanceof Error ? err.message : String(err) };
  }
}

parentPort.on("message", async ({ keys: added, requests }) => {
  for (const { kid, privateKey } of added) keys.set(kid, privateKey);
  parentPort.postMessage(await Promise.all(requests.map(signOne)));
});
