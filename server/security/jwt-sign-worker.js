// The signing thread of server/security/jwt-signer.ts: signs each batch of { id, header, payload }
// it is sent with jose and the key it was started with, and answers with one batch of
// { id, jwt } or { id, error }. Plain JavaScript, so it loads the same under `node --import tsx`
// and under vitest.
import { parentPort, workerData } from "node:worker_threads";
import { SignJWT } from "jose";

const { key } = workerData;

async function signOne({ id, header, payload }) {
  try {
    return { id, jwt: await new SignJWT(payload).setProtectedHeader(header).sign(key) };
  } catch (err) {
    return { id, error: err instanceof Error ? err.message : String(err) };
  }
}

parentPort.on("message", async (batch) => {
  parentPort.postMessage(await Promise.all(batch.map(signOne)));
});
