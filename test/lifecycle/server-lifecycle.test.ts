/**
 * server/lifecycle.ts on a real HTTP server in this process, with the shutdown's timers driven by
 * hand: keep-alive connections end after their response once draining begins, the ports close
 * while requests in flight finish, and SHUTDOWN_TIMEOUT_MS cuts off what is left (the process then
 * exits 1). The whole process is tested in graceful-shutdown.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { createReadiness, drainable, shutDown, type ShutdownPart } from "../../server/lifecycle.ts";
import { portClosed, until } from "../support/server-process.ts";

const logger = pino({ level: "silent" });
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanups.splice(0)) f();
});

/** Timers that run only when the test says so. */
function manualTimers() {
  const due: Array<{ fn: () => void; ms: number; cleared: boolean }> = [];
  return {
    timers: {
      setTimeout: ((fn: () => void, ms: number) => {
        const t = { fn, ms, cleared: false };
        due.push(t);
        return t;
      }) as unknown as typeof setTimeout,
      clearTimeout: ((t: { cleared: boolean }) => {
        if (t) t.cleared = true;
      }) as unknown as typeof clearTimeout,
    },
    /** Runs the pending timer of `ms` milliseconds. */
    fire(ms: number) {
      const t = due.find((d) => d.ms === ms && !d.cleared);
      if (!t) throw new Error(`no pending ${ms} ms timer`);
      t.cleared = true;
      t.fn();
    },
  };
}

/** A server answering `/hold` only when released, anything else at once. */
async function startHoldingServer() {
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === "/hold") held.push(res);
    else res.end("now");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const http = drainable(server);
  cleanups.push(() => server.closeAllConnections());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, http, url, held, until: (n: number) => until(() => held.length >= n, `${n} held requests`) };
}

function get(url: string, agent: Agent | false) {
  return new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    request(url, { agent }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    })
      .on("error", reject)
      .end();
  });
}

it("draining: a request in flight is answered with Connection: close, an idle keep-alive connection is closed, the port closes, and the shutdown ends clean", async () => {
  const s = await startHoldingServer();
  // Two keep-alive clients: one left idle after its answer, one waiting for its answer.
  const idleAgent = new Agent({ keepAlive: true });
  const busyAgent = new Agent({ keepAlive: true });
  cleanups.push(() => (idleAgent.destroy(), busyAgent.destroy()));
  expect((await get(`${s.url}/now`, idleAgent)).connection).toBe("keep-alive");
  const idleSocket = Object.values(idleAgent.freeSockets).flat()[0]!;
  const idleClosed = new Promise<void>((r) => idleSocket.once("close", () => r()));
  expect((await get(`${s.url}/now`, busyAgent)).connection).toBe("keep-alive");
  const inFlight = get(`${s.url}/hold`, busyAgent); // on the kept-alive connection
  await s.until(1);

  const readiness = createReadiness();
  let closed = false;
  const part: ShutdownPart = { name: "test", readiness, http: s.http, close: async () => void (closed = true) };
  const clock = manualTimers();
  const done = shutDown([part], { delayMs: 0, timeoutMs: 25_000, logger, timers: clock.timers });
  expect(readiness.draining).toBe(true);
  await idleClosed;
  await until(() => portClosed(s.url), "the port to close");
  expect(closed).toBe(false); // the service closes after its last request
  s.held[0]!.end("held");
  expect(await inFlight).toEqual({ status: 200, connection: "close", body: "held" });
  expect(await done).toBe(true);
  expect(closed).toBe(true);
});

it("SHUTDOWN_DELAY_MS: the port stays open and serving until the delay ends, every answer closing its connection", async () => {
  const s = await startHoldingServer();
  const clock = manualTimers();
  const part: ShutdownPart = { name: "test", readiness: createReadiness(), http: s.http, close: async () => {} };
  const done = shutDown([part], { delayMs: 5000, timeoutMs: 25_000, logger, timers: clock.timers });
  expect(await get(`${s.url}/now`, false)).toEqual({ status: 200, connection: "close", body: "now" });
  expect(await portClosed(s.url)).toBe(false);
  clock.fire(5000);
  await until(() => portClosed(s.url), "the port to close");
  expect(await done).toBe(true);
});

it("SHUTDOWN_DELAY_MS: a balancer's idle keep-alive connection stays open during the delay, answers its next request with Connection: close, and an idle one is closed when the port closes", async () => {
  const s = await startHoldingServer();
  const pooled = new Agent({ keepAlive: true, maxSockets: 1 });
  const idle = new Agent({ keepAlive: true });
  cleanups.push(() => (pooled.destroy(), idle.destroy()));
  expect((await get(`${s.url}/now`, pooled)).connection).toBe("keep-alive");
  expect((await get(`${s.url}/now`, idle)).connection).toBe("keep-alive");
  const idleSocket = Object.values(idle.freeSockets).flat()[0]!;
  let idleClosed = false;
  idleSocket.once("close", () => (idleClosed = true));
  const clock = manualTimers();
  const part: ShutdownPart = { name: "test", readiness: createReadiness(), http: s.http, close: async () => {} };
  const done = shutDown([part], { delayMs: 5000, timeoutMs: 25_000, logger, timers: clock.timers });
  // During the delay the pooled connection is still there to send on, and another answer does not close it either.
  await new Promise((r) => setTimeout(r, 50));
  expect(idleClosed).toBe(false);
  expect(await get(`${s.url}/now`, pooled)).toEqual({ status: 200, connection: "close", body: "now" });
  await new Promise((r) => setTimeout(r, 50));
  expect(idleClosed).toBe(false);
  clock.fire(5000);
  await until(() => idleClosed, "the idle connection to close with the port");
  await until(() => portClosed(s.url), "the port to close");
  expect(await done).toBe(true);
});

it("SHUTDOWN_TIMEOUT_MS: requests still in flight at the deadline are cut off, and the shutdown is not clean", async () => {
  const s = await startHoldingServer();
  const inFlight = get(`${s.url}/hold`, false).then(
    () => "answered",
    (err: NodeJS.ErrnoException) => err.code,
  );
  await s.until(1);
  const clock = manualTimers();
  let closed = false;
  const part: ShutdownPart = { name: "test", readiness: createReadiness(), http: s.http, close: async () => void (closed = true) };
  const done = shutDown([part], { delayMs: 0, timeoutMs: 25_000, logger, timers: clock.timers });
  await until(() => portClosed(s.url), "the port to close");
  clock.fire(25_000);
  expect(await done).toBe(false);
  expect(await inFlight).toBe("ECONNRESET");
  expect(closed).toBe(true); // started, though the deadline does not wait for it
});

it("SHUTDOWN_TIMEOUT_MS: a service that does not finish closing by the deadline makes the shutdown not clean", async () => {
  const s = await startHoldingServer();
  const clock = manualTimers();
  const part: ShutdownPart = { name: "test", readiness: createReadiness(), http: s.http, close: () => new Promise<void>(() => {}) };
  const done = shutDown([part], { delayMs: 0, timeoutMs: 25_000, logger, timers: clock.timers });
  await until(() => portClosed(s.url), "the port to close");
  clock.fire(25_000);
  expect(await done).toBe(false);
});
