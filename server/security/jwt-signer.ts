/**
 * JWT signing (jose) on a worker thread (ADR 0006): an ES256 signature costs the event loop a
 * noticeable share of a token answer, and the token endpoint makes two per answer (access and ID
 * token). Handed to one worker, the event loop only passes messages and the signatures run on
 * another core. The tokens asked for in one turn of the event loop go over in one message each way
 * (server/background/batcher.ts, `turn`), through server/background/worker-thread.ts. The claims,
 * and so every time in them, are still made by the caller with its own clock. Each request names the
 * key it is signed with (server/keys/: a rotation changes it while the worker runs); a key goes to a
 * worker once.
 */
import type { CryptoKey, JWTHeaderParameters, JWTPayload } from "jose";
import { createBatcher, itemDone, itemFailed } from "../background/batcher.ts";
import { startWorkerThread } from "../background/worker-thread.ts";

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

/** One token to sign, as the worker gets it. */
export interface SignRequest {
  kid: string;
  header: JWTHeaderParameters;
  payload: JWTPayload;
}

/** One message to the worker: the keys it has not had yet, and the requests. */
export interface SignBatch {
  keys: WorkerKey[];
  requests: SignRequest[];
}

/** The worker's answer to a batch: one entry per request, in order. */
export type SignAnswers = Array<{ jwt: string } | { error: string }>;

export function createWorkerSigner(): JwtSigner {
  /** The kids the running worker holds; a new worker holds none. */
  let sent = new Set<string>();
  /** Every key asked for, by kid: which of them a batch carries is decided when it leaves. */
  const keysOf = new Map<string, WorkerKey>();
  const thread = startWorkerThread({
    url: new URL("./jwt-sign-worker.js", import.meta.url),
    name: "the JWT signing thread",
    start: "on-demand",
    onStart: () => {
      sent = new Set();
    },
  });

  const batcher = createBatcher<SignRequest, string>({
    when: "turn",
    async flush(requests) {
      thread.ensureRunning();
      const keys: WorkerKey[] = [];
      for (const r of requests) {
        if (sent.has(r.kid)) continue;
        sent.add(r.kid);
        keys.push(keysOf.get(r.kid)!);
      }
      // A worker that dies fails the whole batch: those requests answer 500, later ones get a new worker.
      const answers = await thread.request<SignAnswers>({ keys, requests } satisfies SignBatch);
      // A request the key cannot sign fails alone.
      return answers.map((a) => ("jwt" in a ? itemDone(a.jwt) : itemFailed(new Error(`JWT signing failed: ${a.error}`))));
    },
  });

  return {
    sign(key, header, payload) {
      if (!keysOf.has(key.kid)) keysOf.set(key.kid, { kid: key.kid, privateKey: key.privateKey });
      return batcher.add({ kid: key.kid, header, payload });
    },
    close: () => thread.terminate(),
  };
}
