/**
 * JWT signing (jose) on a worker thread. On Node 20 an ES256 signature through WebCrypto costs the
 * event loop about 40 µs, and the token endpoint makes two per answer (access and ID token): a
 * fifth of its main-thread time (bench/token.ts). Handing the signing to one worker costs the
 * event loop a few µs per token, and the signatures run on another core; the tokens asked for in
 * one turn of the event loop go over in one message each way. The claims, and so every time in
 * them, are still made by the caller with its own clock. Each request names the key it is signed
 * with (server/keys/: a rotation changes it while the worker runs); a key goes to the worker once.
 */
import { Worker } from "node:worker_threads";
import type { CryptoKey, JWTHeaderParameters, JWTPayload } from "jose";

/** The part of a signing key the worker needs: its id, and its private half. */
export interface WorkerKey {
  kid: string;
  privateKey: CryptoKey;
}

export interface JwtSigner {
  /** The compact JWS of `payload` under `header`, signed with `key`. */
  sign(key: WorkerKey, header: JWTHeaderParameters, payload: JWTPayload): Promise<string>;
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
  kid: string;
  header: JWTHeaderParameters;
  payload: JWTPayload;
}

/** One message to the worker: the keys it has not had yet, and the requests. */
interface Batch {
  keys: WorkerKey[];
  requests: Request[];
}

export function createWorkerSigner(): JwtSigner {
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let worker: Worker | undefined;
  /** The kids the running worker holds. */
  let sent = new Set<string>();
  let batch: Batch = { keys: [], requests: [] };

  /** Every signature in flight fails with `err` (the worker died): their requests answer 500, later ones get a new worker. */
  function failAll(err: Error): void {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  }

  function start(): Worker {
    const w = new Worker(new URL("./jwt-sign-worker.js", import.meta.url));
    sent = new Set();
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

  /** The keys of a batch are decided when it leaves: a worker started since the request was queued holds none yet. */
  const keysOf = new Map<string, WorkerKey>();

  function flush(): void {
    const requests = batch.requests;
    batch = { keys: [], requests: [] };
    worker ??= start();
    const keys: WorkerKey[] = [];
    for (const r of requests) {
      if (sent.has(r.kid)) continue;
      sent.add(r.kid);
      keys.push(keysOf.get(r.kid)!);
    }
    worker.postMessage({ keys, requests } satisfies Batch);
  }

  return {
    sign(key, header, payload) {
      const id = nextId++;
      if (!keysOf.has(key.kid)) keysOf.set(key.kid, { kid: key.kid, privateKey: key.privateKey });
      return new Promise<string>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        if (batch.requests.push({ id, kid: key.kid, header, payload }) === 1) setImmediate(flush);
      });
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}
