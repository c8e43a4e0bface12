/**
 * JWT signing (jose) on a worker thread. On Node 20 an ES256 signature through WebCrypto costs the
 * event loop about 40 µs, and the token endpoint makes two per answer (access and ID token): a
 * fifth of its main-thread time (bench/token.ts). Handing the signing to one worker costs the
 * event loop a few µs per token, and the signatures run on another core; the tokens asked for in
 * one turn of the event loop go over in one message each way. The claims, and so every time in
 * them, are still made by the caller with its own clock.
 */
import { Worker } from "node:worker_threads";
import type { CryptoKey, JWTHeaderParameters, JWTPayload } from "jose";

export interface JwtSigner {
  /** The compact JWS of `payload` under `header`, signed with the signer's key. */
  sign(header: JWTHeaderParameters, payload: JWTPayload): Promise<string>;
  /** Stops the worker; signing afterwards starts a new one. */
  close(): Promise<void>;
}

interface Pending {
  resolve(jwt: string): void;
  reject(err: Error): void;
}

type Answer = { id: number; jwt: string } | { id: number; error: string };
interface Request {
  id: number;
  header: JWTHeaderParameters;
  payload: JWTPayload;
}

export function createWorkerSigner(key: CryptoKey): JwtSigner {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let worker: Worker | undefined;
  let batch: Request[] = [];

  /** Every signature in flight fails with `err` (the worker died): their requests answer 500, later ones get a new worker. */
  function failAll(err: Error): void {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  }

  function start(): Worker {
    const w = new Worker(new URL("./jwt-sign-worker.js", import.meta.url), { workerData: { key } });
    // Idle, it must not keep the process alive; the servers do.
    w.unref();
    w.on("message", (answers: Answer[]) => {
      for (const answer of answers) {
        const p = pending.get(answer.id);
        if (!p) continue;
        pending.delete(answer.id);
        if ("jwt" in answer) p.resolve(answer.jwt);
        else p.reject(new Error(`JWT signing failed: ${answer.error}`));
      }
    });
    w.on("error", (err) => failAll(err));
    w.on("exit", (code) => {
      if (worker === w) worker = undefined;
      failAll(new Error(`the JWT signing worker exited (code ${code})`));
    });
    return w;
  }

  function flush(): void {
    const requests = batch;
    batch = [];
    worker ??= start();
    worker.postMessage(requests);
  }

  return {
    sign(header, payload) {
      const id = nextId++;
      return new Promise<string>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        if (batch.push({ id, header, payload }) === 1) setImmediate(flush);
      });
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}
