/**
 * The driver's side of a benchmark server: forks bench/token/server.ts for one kind (once, or once
 * per instance), waits for `ready`, and sends it commands over IPC. Each server gets its own
 * keep-alive client pool.
 */
import { fork, type ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import type { Pool } from "undici";
import { createClient, runLoad, type RunResult } from "./load.ts";
import { BENCH_API, type BenchClient, type Command, type CommandBody, type MintedCode, type Reply, type ServerKind } from "./protocol.ts";

export interface Server {
  /** A forked server's kind, or `keycloak` (bench/token/keycloak.ts: a Java process the driver runs itself). */
  kind: ServerKind | "keycloak";
  url: string;
  tokenPath: string;
  client: BenchClient;
  notes: string;
  pool: Pool;
  call(command: CommandBody): Promise<Reply>;
  stop(): Promise<void>;
}

/** One forked server process and its IPC channel. */
interface Child {
  ready: Extract<Reply, { type: "ready" }>;
  call(command: CommandBody): Promise<Reply>;
  stop(): Promise<void>;
}

/**
 * Starts a server: one process, or for `instances` > 1 (ours only) that many sharing one port
 * (SO_REUSEPORT; the kernel spreads the pool's connections over them) and one database. The first
 * mints the codes; `cpu` readings are the sum over all of them; `concurrency` is the pool's size.
 * `env` is added to the server processes' environment (oidc-provider's BENCH_THEIRS_STORE: one
 * process per store).
 */
export async function startServer(kind: ServerKind, concurrency: number, instances = 1, env: Record<string, string> = {}): Promise<Server> {
  if (instances > 1 && kind !== "ours") throw new Error(`${kind} runs as one process (only ours has its state in a database)`);
  const first = await forkServer(kind, { ...env, ...(instances > 1 ? { BENCH_REUSE_PORT: "1" } : {}) });
  const children = [first];
  try {
    const join = first.ready.join;
    if (instances > 1 && !join) throw new Error(`${kind}: the first instance gave nothing to join`);
    // One after another: their migrations and key ring find everything in place.
    for (let i = 2; i <= instances; i++)
      children.push(await forkServer(kind, { ...env, BENCH_JOIN: JSON.stringify(join), BENCH_INSTANCE: String(i) }));
  } catch (err) {
    await Promise.all(children.map((c) => c.stop()));
    throw err;
  }
  const { ready } = first;
  const pool = createClient(ready.url, concurrency);
  return {
    kind,
    url: ready.url,
    tokenPath: ready.tokenPath,
    client: ready.client,
    notes: instances > 1 ? `${instances} processes on one port (SO_REUSEPORT): ${ready.notes}` : ready.notes,
    pool,
    async call(command) {
      if (command.type !== "cpu") return first.call(command);
      const readings = await Promise.all(children.map((c) => c.call(command)));
      const perInstance: Array<{ micros: number; loopMicros: number }> = [];
      for (const r of readings) {
        if (r.type !== "cpu") return r;
        perInstance.push({ micros: r.micros, loopMicros: r.loopMicros });
      }
      const sum = (key: "micros" | "loopMicros") => perInstance.reduce((a, r) => a + r[key], 0);
      return { id: 0, type: "cpu", micros: sum("micros"), loopMicros: sum("loopMicros"), ...(instances > 1 ? { perInstance } : {}) };
    },
    async stop() {
      await pool.close();
      // The further instances first: the first removes the data directory they use.
      await Promise.all(children.slice(1).map((c) => c.stop()));
      await first.stop();
    },
  };
}

/** Forks bench/token/server.ts for `kind` with `env` added, and waits for its `ready`. */
async function forkServer(kind: ServerKind, env: Record<string, string>): Promise<Child> {
  const entry = fileURLToPath(new URL("./server.ts", import.meta.url));
  // Our service's request log goes to /dev/null (stdout ignored); errors still show.
  // BENCH_PROFILE=ours (or oidc-provider, or a peer's name: BENCH_SERVER_NAME) writes V8 CPU profiles of
  // that server to BENCH_PROFILE_DIR: by default one per timed run (the server profiles itself between
  // the run's two `cpu` commands, so code minting and start-up are left out); BENCH_PROFILE_SCOPE=process
  // profiles the whole process.
  const profiled =
    process.env.BENCH_PROFILE === kind || (env.BENCH_SERVER_NAME !== undefined && process.env.BENCH_PROFILE === env.BENCH_SERVER_NAME);
  const profileDir = process.env.BENCH_PROFILE_DIR ?? "bench-profiles";
  const wholeProcess = process.env.BENCH_PROFILE_SCOPE === "process";
  const profile = profiled && wholeProcess ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const child: ChildProcess = fork(entry, [kind], {
    execArgv: ["--import", "tsx", ...profile],
    env: { ...process.env, ...env, BENCH_PROFILE_RUNS_DIR: profiled && !wholeProcess ? profileDir : "" },
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const pending = new Map<number, (r: Reply) => void>();
  let nextId = 1;
  const ready = await new Promise<Extract<Reply, { type: "ready" }>>((resolve, reject) => {
    child.on("message", (reply: Reply) => {
      if (reply.type === "ready") return resolve(reply);
      const waiter = "id" in reply && reply.id !== undefined ? pending.get(reply.id) : undefined;
      if (waiter) return waiter(reply);
      if (reply.type === "error") reject(new Error(`${kind}: ${reply.message}`));
    });
    child.once("exit", (code) => reject(new Error(`${kind} exited (${code}) before it was ready:\n${stderr}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const call = (command: CommandBody) =>
    new Promise<Reply>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, (reply) => {
        pending.delete(id);
        if (reply.type === "error") reject(new Error(`${kind}: ${reply.message}`));
        else resolve(reply);
      });
      child.send({ ...command, id } as Command);
    });
  return {
    ready,
    call,
    async stop() {
      if (child.exitCode === null && child.connected) await call({ type: "stop" }).catch(() => undefined);
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `count` fresh codes from the server (not timed). */
export async function mint(server: Server, count: number): Promise<MintedCode[]> {
  const reply = await server.call({ type: "mint", count });
  if (reply.type !== "minted") throw new Error(`${server.kind}: unexpected reply ${reply.type}`);
  return reply.codes;
}

/** RFC 6749 §2.3.1 client_secret_basic. */
export const basic = (c: BenchClient) =>
  `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.clientSecret)}`).toString("base64")}`;

/** One authorization_code + PKCE form per minted code. */
export const codeBodies = (server: Server, codes: MintedCode[]) =>
  codes.map((c) =>
    new URLSearchParams({
      grant_type: "authorization_code",
      code: c.code,
      redirect_uri: server.client.redirectUri,
      code_verifier: c.verifier,
    }).toString(),
  );

/** `count` client_credentials forms (BENCH_API): each request stands alone, no code or token is used up. */
export const clientCredentialsBodies = (count: number) =>
  Array.from({ length: count }, () =>
    new URLSearchParams({ grant_type: "client_credentials", scope: BENCH_API.scope, resource: BENCH_API.resource }).toString(),
  );

/** One refresh_token form per token. */
export const refreshBodies = (tokens: string[]) =>
  tokens.map((t) => new URLSearchParams({ grant_type: "refresh_token", refresh_token: t }).toString());

/** All cores' time so far (ms): idle, and in all. */
function machineTimes(): { idle: number; total: number } {
  let idle = 0;
  let total = 0;
  for (const { times } of cpus()) {
    idle += times.idle;
    total += times.user + times.nice + times.sys + times.idle + times.irq;
  }
  return { idle, total };
}

async function cpuMicros(server: Server, phase: "start" | "end"): Promise<Extract<Reply, { type: "cpu" }>> {
  const reply = await server.call({ type: "cpu", phase });
  if (reply.type !== "cpu") throw new Error(`${server.kind}: unexpected reply ${reply.type}`);
  return reply;
}

/**
 * One timed run: every body once, over the server's pool, `concurrency` at a time. Also measures
 * the server process's CPU time per request over the run (all its threads; all its instances'), which
 * unlike the rate depends less on what else the machine is doing, and the time its event loop was
 * busy (summed over its instances); and how busy the whole machine was (every process, all cores).
 */
export async function runAgainst(server: Server, bodies: string[], concurrency: number): Promise<RunResult> {
  const before = await cpuMicros(server, "start");
  const machineBefore = machineTimes();
  const result = await runLoad({
    pool: server.pool,
    path: server.tokenPath,
    headers: { authorization: basic(server.client) },
    bodies,
    concurrency,
    expectJson: server.kind !== "ceiling",
  });
  const machineAfter = machineTimes();
  const after = await cpuMicros(server, "end");
  result.machineBusy = 1 - (machineAfter.idle - machineBefore.idle) / (machineAfter.total - machineBefore.total);
  result.cpuMicrosPerRequest = (after.micros - before.micros) / bodies.length;
  result.loopMicrosPerRequest = (after.loopMicros - before.loopMicros) / bodies.length;
  if (after.perInstance && before.perInstance)
    result.cpuSharePerInstance = after.perInstance.map(
      (a, i) => (a.micros - before.perInstance![i]!.micros) / (after.micros - before.micros),
    );
  return result;
}
