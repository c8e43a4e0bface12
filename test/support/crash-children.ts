/**
 * The processes a crash test starts and kills, and what it sets up around them. After the file's
 * tests every child still running is killed (SIGKILL) and the clean-ups run, last first (a
 * database is dropped before its server stops).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { afterAll } from "vitest";

/** A child as the test holds it: the process, the JSON lines it has reported on stdout, and a wait for one of them. */
export interface CrashChild {
  child: ChildProcess;
  lines: any[];
  /** Resolves once a reported line has `key`; fails when the child exits first or `timeoutMs` pass. */
  waitFor(key: string, timeoutMs?: number): Promise<void>;
}

export function crashChildren(script: string) {
  const children = new Set<ChildProcess>();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    for (const f of cleanups.reverse()) await f();
  });
  return {
    cleanups,
    /**
     * `script` under tsx with `args`, our environment plus `env`; its stderr is ours, its stdout one
     * JSON object a line: the service's own log lines (pino's, with a `level`) are copied to our
     * stderr, every other line is a report the test waits for.
     */
    start(args: string[], env: Record<string, string>): CrashChild {
      const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.add(child);
      child.on("exit", () => children.delete(child));
      const lines: any[] = [];
      createInterface({ input: child.stdout! }).on("line", (l) => {
        const o = JSON.parse(l);
        if ("level" in o) process.stderr.write(`${l}\n`);
        else lines.push(o);
      });
      // Generous: a child starting while the machine runs the rest of the suite can take tens of seconds.
      const waitFor = async (key: string, timeoutMs = 90_000) => {
        const deadline = Date.now() + timeoutMs;
        while (!lines.some((l) => key in l)) {
          if (Date.now() > deadline) throw new Error(`child did not report ${key}`);
          if (child.exitCode !== null) throw new Error(`child exited with ${child.exitCode} before ${key}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      return { child, lines, waitFor };
    },
  };
}

/** Sends `signal` to each child and resolves once every one has exited. */
export async function stopAll(children: CrashChild[], signal: NodeJS.Signals): Promise<void> {
  for (const c of children) c.child.kill(signal);
  await Promise.all(
    children.map(({ child }) => (child.exitCode !== null || child.signalCode ? undefined : new Promise((r) => child.once("exit", r)))),
  );
}

/** Polls `predicate` until it holds; after `timeoutMs` fails with `what()`, the state it was waiting on. */
export async function waitUntil(predicate: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What an arrival log keeps of a key besides the test's own fields. */
export interface Arrival {
  /** What came with the key the first time (a body, a recipient): every repeat must bring the same. */
  content: string;
  arrivals: number;
  /** The key first came after the restart (`restarted()`). */
  afterRestart: boolean;
  /** A repeat brought other content than the first arrival. */
  mismatch: boolean;
}

/**
 * What a crash test's receiver or relay got, by key (a delivery id, a Message-ID): a key's first
 * arrival is recorded with the fields `first` gives; a repeat is counted, and checked to bring the
 * same content. A repeat of a key first seen after the restart is counted apart: the processes that
 * run after the restart were never killed, so they must never send one thing twice.
 */
export function arrivalLog<E extends object>() {
  const byKey = new Map<string, E & Arrival>();
  let afterRestart = false;
  let repeatsAfterRestart = 0;
  return {
    byKey,
    record(key: string, content: string, first: () => E): E & Arrival {
      const seen = byKey.get(key);
      if (seen) {
        seen.arrivals++;
        if (seen.afterRestart) repeatsAfterRestart++;
        if (seen.content !== content) seen.mismatch = true;
        return seen;
      }
      const entry = { ...first(), content, arrivals: 1, afterRestart, mismatch: false };
      byKey.set(key, entry);
      return entry;
    },
    /** From now on arrivals are after the restart. */
    restarted: () => void (afterRestart = true),
    afterRestart: () => afterRestart,
    repeatsAfterRestart: () => repeatsAfterRestart,
  };
}

export type ArrivalLog<E extends object> = ReturnType<typeof arrivalLog<E>>;

/**
 * A crash test's webhook receiver on 127.0.0.1: each request is read whole and handed to `handle`,
 * which records it in the receiver's arrival log and answers it (or holds the answer) as the test
 * needs. The server closes after the file's tests (`cleanups`).
 */
export async function crashReceiver<E extends object>(
  cleanups: Array<() => Promise<void> | void>,
  handle: (request: { req: IncomingMessage; res: ServerResponse; body: string }, log: ArrivalLog<E>) => void,
): Promise<{ base: string; log: ArrivalLog<E> }> {
  const log = arrivalLog<E>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle({ req, res, body: Buffer.concat(chunks).toString("utf8") }, log));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, log };
}
