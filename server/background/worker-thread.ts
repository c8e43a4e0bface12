/**
 * One worker-thread wrapper: starts a worker module, sends it requests and matches its answers,
 * stops it. The thread's half, and the protocol of both, is thread-side.ts; a worker module is plain
 * JavaScript checked through JSDoc (`// @ts-check`) that calls `serveThread`.
 *
 * - `start: "now"`: the thread starts at once and for good (it holds a database connection, say);
 *   once it died, every request fails with the reason. `start: "on-demand"`: it starts with the
 *   first request; one that died fails the requests it held, and the next request starts another
 *   (`onStart` is told, since the new thread holds nothing sent to the old one).
 * - A thread that opens something announces itself first: `checkHello` checks its hello (a throw
 *   refuses the thread), and requests wait for it.
 * - Idle, a thread keeps no process alive; a request in flight does (its answer is awaited).
 * - An answer's error keeps its `code` (an SQLite error's, say) and is prefixed with the thread's name.
 */
import { Worker } from "node:worker_threads";
import type { FromThread, ToThread } from "./thread-side.ts";

export interface WorkerThreadOptions<Hello> {
  /** The worker module, as `new URL("./x-worker.js", import.meta.url)`. */
  url: URL;
  /** What the thread is, in errors: "the JWT signing thread". */
  name: string;
  workerData?: unknown;
  start: "now" | "on-demand";
  /** Checks the thread's hello and returns what `ready` resolves with; without it, the thread sends none. */
  checkHello?(hello: unknown): Hello;
  /** Told when a thread starts. */
  onStart?(): void;
  /** Told when a thread has exited, whatever the cause. */
  onExit?(): void;
}

export interface WorkerThread<Hello> {
  /** The checked hello of the running thread (start "now"); rejects if it could not open, was refused, or exited first. */
  readonly ready: Promise<Hello | undefined>;
  /** Starts a thread if none runs (on-demand): what is decided next (which state it holds) is decided for that thread. */
  ensureRunning(): void;
  /** Sends `body` and resolves with the thread's answer (rejects with its error, or when the thread ends first). */
  request<T>(body: unknown, transfer?: ArrayBuffer[]): Promise<T>;
  /** Stops the thread once it has answered what it was sent, and waits for its exit. */
  stop(): Promise<void>;
  /** Ends the thread at once: what it held fails. */
  terminate(): Promise<void>;
}

interface Call {
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

interface Running<Hello> {
  worker: Worker;
  pending: Map<number, Call>;
  ready: Promise<Hello | undefined>;
  exited: Promise<void>;
  failure: Error | undefined;
}

export function startWorkerThread<Hello = undefined>(options: WorkerThreadOptions<Hello>): WorkerThread<Hello> {
  const { name } = options;
  let nextId = 0;
  let current: Running<Hello> | undefined;

  /** Every request of `run` fails with `err` (the first failure sticks), and an on-demand thread is replaced by the next request. */
  function fail(run: Running<Hello>, err: Error): void {
    run.failure ??= err;
    for (const call of run.pending.values()) call.reject(run.failure);
    run.pending.clear();
    if (options.start === "on-demand" && current === run) current = undefined;
  }

  function launch(): Running<Hello> {
    const worker = new Worker(options.url, options.workerData === undefined ? {} : { workerData: options.workerData });
    worker.unref();
    let hello: { resolve(h: Hello): void; reject(err: unknown): void } | undefined;
    const run: Running<Hello> = {
      worker,
      pending: new Map(),
      ready: options.checkHello ? new Promise<Hello>((resolve, reject) => (hello = { resolve, reject })) : Promise.resolve(undefined),
      exited: Promise.resolve(),
      failure: undefined,
    };
    run.ready.catch(() => {});
    const refuse = (err: Error) => {
      fail(run, err);
      hello?.reject(run.failure);
    };
    worker.on("message", (m: FromThread) => {
      if ("ready" in m) {
        try {
          hello?.resolve(options.checkHello!(m.ready));
        } catch (err) {
          refuse(err instanceof Error ? err : new Error(String(err)));
        }
        return;
      }
      if ("openFailed" in m) {
        refuse(new Error(`${name}: ${m.openFailed}`));
        return;
      }
      const call = run.pending.get(m.answer);
      if (!call) return;
      run.pending.delete(m.answer);
      if (!run.pending.size) worker.unref();
      if ("error" in m) call.reject(Object.assign(new Error(`${name}: ${m.error.message}`), m.error.code ? { code: m.error.code } : {}));
      else call.resolve(m.result);
    });
    worker.on("error", (err) => refuse(err));
    run.exited = new Promise<void>((resolve) =>
      worker.once("exit", (code) => {
        refuse(new Error(`${name} exited (code ${code})`));
        options.onExit?.();
        resolve();
      }),
    );
    options.onStart?.();
    return run;
  }

  if (options.start === "now") current = launch();
  const running = (): Running<Hello> => (current ??= launch());

  return {
    get ready() {
      return current?.ready ?? Promise.resolve(undefined);
    },

    ensureRunning() {
      running();
    },

    async request<T>(body: unknown, transfer: ArrayBuffer[] = []): Promise<T> {
      const run = running();
      await run.ready;
      if (run.failure) throw run.failure;
      return new Promise<T>((resolve, reject) => {
        const id = nextId++;
        run.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        if (run.pending.size === 1) run.worker.ref();
        run.worker.postMessage({ request: id, body } satisfies ToThread, transfer);
      });
    },

    async stop() {
      const run = current;
      if (!run) return;
      if (options.start === "on-demand") current = undefined;
      run.worker.postMessage({ stop: true } satisfies ToThread);
      await run.exited;
    },

    async terminate() {
      const run = current;
      if (!run) return;
      if (options.start === "on-demand") current = undefined;
      await run.worker.terminate();
      await run.exited;
    },
  };
}
