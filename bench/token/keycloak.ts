/**
 * Keycloak as a peer of bench/token.ts (the `keycloak` entry of bench/token/peers.ts): its Quarkus
 * distribution, installed into .tools/ on first use (scripts/keycloak.sh), started as one Java process
 * on a database of its own on the PostgreSQL server of BENCH_DATABASE_URL (created at start, dropped at
 * stop), so that it and ours share one server; the realm, client and user as keycloak-realm.ts
 * configures them; codes minted through its login form (keycloak-login.ts).
 *
 * Unlike the other servers it is not a forked Node process: this module runs in the driver and answers
 * the driver's commands itself. `cpu` reads the Java process's user + system time from /proc (all its
 * threads); it has no single event loop, so its event-loop figure is NaN, printed as n/a.
 *
 * Every process started here is stopped by `stop()`, when starting fails, and on SIGINT/SIGTERM or exit
 * of the driver.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import knexFactory from "knex";
import { request } from "undici";
import { configureRealm, REALM } from "./keycloak-realm.ts";
import { codeMinter } from "./keycloak-login.ts";
import { createClient } from "./load.ts";
import { codeBodies, type Server } from "./process.ts";
import { cpuMicrosOf, statFields, statName, ticksToMicros } from "../lib/proc-cpu.ts";
import type { Reply } from "./protocol.ts";

/** How long Keycloak may take to answer after its start (it starts in 15-30 s on a quiet machine). */
const START_TIMEOUT_MS = Number(process.env.BENCH_KEYCLOAK_START_SECONDS ?? 300) * 1000;
/** How long a SIGTERM may take before SIGKILL. */
const STOP_TIMEOUT_MS = 20_000;
/** Its heap: bounded, on a machine that also runs ours, the database and the load client. */
const HEAP = process.env.BENCH_KEYCLOAK_HEAP ?? "-Xms256m -Xmx768m";
/** Databases of this benchmark are named with this prefix and the driver's pid. */
const DATABASE_PREFIX = "keycloak_bench_";
/** Codes minted and exchanged once at start: the login and token paths run once before the driver's warm-up. */
const WARM_CODES = 50;

/** A free TCP port on the loopback (closed again; Keycloak binds it right after). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The installed distribution's folder (scripts/keycloak.sh installs it the first time). */
async function distribution(): Promise<string> {
  const script = fileURLToPath(new URL("../../scripts/keycloak.sh", import.meta.url));
  const { stdout } = await promisify(execFile)("bash", [script, "--path"], { maxBuffer: 1 << 20 });
  return stdout.trim();
}

/** Whether a process of this pid still runs (a driver whose database may still be in use). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The database of this run on BENCH_DATABASE_URL's server; drops the stale ones of drivers that died. */
async function createDatabase(serverUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `${DATABASE_PREFIX}${process.pid}`;
  const admin = async <T>(work: (server: ReturnType<typeof knexFactory>) => Promise<T>): Promise<T> => {
    const server = knexFactory({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
    try {
      return await work(server);
    } finally {
      await server.destroy();
    }
  };
  await admin(async (server) => {
    const rows = (await server("pg_database").select("datname").whereLike("datname", `${DATABASE_PREFIX}%`)) as Array<{ datname: string }>;
    for (const { datname } of rows) {
      const pid = Number(datname.slice(DATABASE_PREFIX.length));
      if (datname === name || !alive(pid)) await server.raw(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
    await server.raw(`CREATE DATABASE "${name}"`);
  });
  return { name, drop: () => admin((server) => server.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined) };
}

/** The Java process kc.sh starts (kc.sh stays its parent, to forward signals; its other children are short-lived). */
async function javaPid(shell: ChildProcess, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const children = readFileSync(`/proc/${shell.pid}/task/${shell.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
      const java = children.find((pid) => readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "java");
      if (java) return Number(java);
    } catch {
      // kc.sh has exited, or a child did as it was read: the caller finds out, or the next look does.
    }
    if (shell.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("Keycloak: kc.sh started no Java process");
}

/** Every thread's CPU time (µs) by kind: its name without its number ("executor-thread-12" → "executor-thread"). */
function cpuMicrosByThreadKind(pid: number): Map<string, number> {
  const byKind = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const path = `/proc/${pid}/task/${tid}/stat`;
      const kind = statName(path)
        .replace(/[\s#-]*\d+$/, "")
        .replace(/\d+/g, "N");
      const fields = statFields(path);
      byKind.set(kind, (byKind.get(kind) ?? 0) + ticksToMicros(fields[11], fields[12]));
    } catch {
      // The thread ended as it was read: its time is lost to this breakdown only (the process total keeps it).
    }
  }
  return byKind;
}

/**
 * BENCH_PROFILE=keycloak: each timed run's CPU time by thread kind, appended to
 * BENCH_PROFILE_DIR/keycloak-threads.txt (Keycloak has no V8 profile; this says where its CPU went).
 */
function threadProfiler(pid: number): ((phase: "start" | "end") => void) | undefined {
  if (process.env.BENCH_PROFILE !== "keycloak") return undefined;
  const dir = process.env.BENCH_PROFILE_DIR ?? "bench-profiles";
  mkdirSync(dir, { recursive: true });
  let before = new Map<string, number>();
  let run = 0;
  return (phase) => {
    if (phase === "start") {
      before = cpuMicrosByThreadKind(pid);
      return;
    }
    const after = cpuMicrosByThreadKind(pid);
    const spent = [...after].map(([kind, micros]) => [kind, micros - (before.get(kind) ?? 0)] as const).filter(([, m]) => m > 0);
    const total = spent.reduce((a, [, m]) => a + m, 0);
    const parts = spent.sort((a, b) => b[1] - a[1]).map(([kind, m]) => `${kind} ${((100 * m) / total).toFixed(1)}%`);
    appendFileSync(
      `${dir}/keycloak-threads.txt`,
      `run ${String(++run).padStart(2, "0")}: ${(total / 1e6).toFixed(2)} s CPU; ${parts.join(", ")}\n`,
    );
  };
}

/** kc.sh's arguments: the optimized start (built for PostgreSQL by scripts/keycloak.sh) on `database`. */
function startArguments(serverUrl: string, database: string, httpPort: number, managementPort: number): string[] {
  const u = new URL(serverUrl);
  return [
    "start",
    "--optimized",
    `--db-url=jdbc:postgresql://${u.hostname}:${u.port || 5432}/${database}`,
    `--db-username=${decodeURIComponent(u.username)}`,
    `--db-password=${decodeURIComponent(u.password)}`,
    "--http-enabled=true",
    "--hostname-strict=false",
    "--http-host=127.0.0.1",
    `--http-port=${httpPort}`,
    `--http-management-port=${managementPort}`,
    // One node, as ours is one process: no cluster to discover (its sessions are in the database either way).
    "--cache=local",
  ];
}

/** The first JWT's header `alg`. */
const algOf = (jwt: string) => (JSON.parse(Buffer.from(jwt.split(".")[0]!, "base64url").toString()) as { alg?: string }).alg;

export async function startKeycloak(concurrency: number): Promise<Server> {
  const serverUrl = process.env.BENCH_DATABASE_URL;
  if (!serverUrl) throw new Error("BENCH_PEERS=keycloak needs BENCH_DATABASE_URL (Keycloak runs on PostgreSQL, on that server)");
  const dir = await distribution();
  const database = await createDatabase(serverUrl);
  const admin = { username: "bench-admin", password: randomBytes(18).toString("base64url") };
  const [httpPort, managementPort] = [await freePort(), await freePort()];
  const startedAt = Date.now();
  const shell = spawn(`${dir}/bin/kc.sh`, startArguments(serverUrl, database.name, httpPort, managementPort), {
    env: {
      ...process.env,
      KC_BOOTSTRAP_ADMIN_USERNAME: admin.username,
      KC_BOOTSTRAP_ADMIN_PASSWORD: admin.password,
      JAVA_OPTS_KC_HEAP: HEAP,
    },
    // A group of its own: kc.sh and Java are signalled together, and a Ctrl-C reaches them only through stop().
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (d: Buffer) => (log = (log + d.toString()).slice(-20_000));
  shell.stdout!.on("data", keep);
  shell.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => shell.once("exit", () => resolve()));
  let running = true;
  void exited.then(() => (running = false));

  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-shell.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  const onExit = () => running && killGroup("SIGKILL");
  const onSignal = (signal: NodeJS.Signals) => void stopAll().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  process.on("exit", onExit);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const base = `http://127.0.0.1:${httpPort}`;
  const pool = createClient(base, concurrency);
  let minter: ReturnType<typeof codeMinter> | undefined;
  let stopping: Promise<void> | undefined;
  function stopAll(): Promise<void> {
    stopping ??= (async () => {
      await pool.close().catch(() => undefined);
      await minter?.close().catch(() => undefined);
      if (running) {
        killGroup("SIGTERM");
        const timer = setTimeout(() => killGroup("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      await database.drop().catch((err: unknown) => console.error(`Keycloak: dropping database ${database.name}: ${String(err)}`));
      process.off("exit", onExit);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    })();
    return stopping;
  }

  try {
    const pid = await javaPid(shell, START_TIMEOUT_MS);
    // Ready when the master realm answers.
    for (;;) {
      if (!running) throw new Error(`Keycloak exited before it was ready:\n${log}`);
      if (Date.now() - startedAt > START_TIMEOUT_MS)
        throw new Error(`Keycloak did not answer within ${START_TIMEOUT_MS / 1000} s:\n${log}`);
      const ok = await request(`${base}/realms/master`)
        .then(async (r) => (await r.body.text(), r.statusCode === 200))
        .catch(() => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const startSeconds = (Date.now() - startedAt) / 1000;
    const { client, user } = await configureRealm(base, admin, {
      clientSecret: `cs_${randomBytes(32).toString("base64url")}`,
      userPassword: randomBytes(18).toString("base64url"),
    });
    minter = codeMinter(base, client, user);
    const tokenPath = `/realms/${REALM}/protocol/openid-connect/token`;
    const profileThreads = threadProfiler(pid);
    const version = readFileSync(`${dir}/version.txt`, "utf8").trim();

    const server: Server = {
      kind: "keycloak",
      url: base,
      tokenPath,
      client,
      notes:
        `${version}, started in ${startSeconds.toFixed(0)} s, on PostgreSQL (database ${database.name}), heap ${HEAP}, cache local; ` +
        "ES256 access + ID tokens, PKCE S256, refresh tokens of persistent user sessions (no offline_access), rotated and revoked on reuse (revokeRefreshToken, refreshTokenMaxReuse 0)",
      pool,
      async call(command): Promise<Reply> {
        if (command.type === "mint") return { id: 0, type: "minted", codes: await minter!.mint(command.count) };
        if (command.type === "cpu") {
          if (command.phase === "end") profileThreads?.("end");
          const micros = cpuMicrosOf(pid);
          if (command.phase === "start") profileThreads?.("start");
          return { id: 0, type: "cpu", micros, loopMicros: Number.NaN };
        }
        await stopAll();
        return { id: 0, type: "stopped" };
      },
      stop: stopAll,
    };
    await warm(server, minter);
    return server;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * A few codes minted and exchanged before the driver's own warm-up; checks the tokens are ES256. The first
 * sign-ins go one at a time: concurrent sign-ins on a Keycloak that has served none lose their auth
 * sessions ("Your login attempt timed out"), and later ones do not.
 */
async function warm(server: Server, minter: ReturnType<typeof codeMinter>): Promise<void> {
  const codes = [...(await minter.mint(WARM_CODES / 2, 1)), ...(await minter.mint(WARM_CODES / 2))];
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(server.client.clientId)}:${encodeURIComponent(server.client.clientSecret)}`).toString("base64")}`;
  for (const body of codeBodies(server, codes)) {
    const res = await server.pool.request({
      path: server.tokenPath,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic },
      body,
    });
    const json = (await res.body.json()) as { access_token?: string; id_token?: string };
    if (res.statusCode !== 200 || !json.access_token) throw new Error(`Keycloak code exchange: ${res.statusCode} ${JSON.stringify(json)}`);
    for (const token of [json.access_token, json.id_token])
      if (token && algOf(token) !== "ES256") throw new Error(`Keycloak signed a token with ${algOf(token)}, not ES256`);
  }
}
