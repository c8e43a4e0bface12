/**
 * The real server process for tests of the deployment's behaviour: app/main.ts (or another
 * entry point) in a child process on free ports of 127.0.0.1, its JSON log lines collected, and the
 * admin command. Every child started here is killed by `killAll` if a test left it running.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const ROOT = join(import.meta.dirname, "../..");
export type ServiceName = "identity" | "repository" | "email";

export interface ServerProcess {
  child: ChildProcess;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  urls: Partial<Record<ServiceName, string>>;
  logs: Array<Record<string, unknown>>;
  stderr: () => string;
}

const children = new Set<ChildProcess>();

/** SIGKILL for every child still running (afterAll). */
export function killAll(): void {
  for (const c of children) c.kill("SIGKILL");
}

/**
 * Environment of a server on free ports, its SQLite files in `dataDir`. No balancer routes to a test's
 * server, so SIGTERM closes its ports at once (SHUTDOWN_DELAY_MS 0); a test of the delay sets its own,
 * and `undefined` leaves a variable unset (its default).
 */
export function serverEnv(dataDir: string, env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    IDENTITY_PORT: "0",
    REPOSITORY_PORT: "0",
    EMAIL_PORT: "0",
    EMAIL_INBOUND_SMTP_PORT: "0",
    EMAIL_SIMULATOR_REPORT_DELAY_MS: "0",
    LOG_LEVEL: "info",
    SHUTDOWN_DELAY_MS: "0",
    ...env,
  };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  return merged;
}

/** Starts `node --import tsx <script> ...args` in the project; for app/main.ts, `urls` fills in as services listen. */
export function startProcess(script: string, args: string[], env: NodeJS.ProcessEnv): ServerProcess {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const logs: Array<Record<string, unknown>> = [];
  const urls: ServerProcess["urls"] = {};
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      entry = { text: line };
    }
    logs.push(entry);
    if (typeof entry.url === "string" && typeof entry.service === "string") urls[entry.service as ServiceName] = entry.url;
  });
  return { child, exited, urls, logs, stderr: () => stderr };
}

/** app/main.ts with the given services (all by default), resolved once each of them listens. */
export async function startServer(
  dataDir: string,
  env: Record<string, string | undefined> = {},
  services: ServiceName[] = ["identity", "repository", "email"],
): Promise<ServerProcess & { urls: Record<ServiceName, string> }> {
  const server = startProcess("app/main.ts", services, serverEnv(dataDir, env));
  let exitCode: number | null | undefined;
  void server.exited.then((code) => (exitCode = code));
  await until(
    () => {
      if (exitCode !== undefined) throw new Error(`server exited with ${exitCode} before listening:\n${server.stderr()}`);
      return services.every((s) => server.urls[s]);
    },
    "the services to listen",
    120_000,
  );
  return server as ServerProcess & { urls: Record<ServiceName, string> };
}

/** Runs the admin command (app/admin.ts) and returns its output. */
export function admin(env: NodeJS.ProcessEnv, args: string[], input = ""): string {
  return execFileSync(process.execPath, ["--import", "tsx", "app/admin.ts", ...args], {
    cwd: ROOT,
    env: { ...env, LOG_LEVEL: "silent" },
    input,
    encoding: "utf8",
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Polls `predicate` until it holds; throws naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** GET on a new connection: the status, or "refused" when the port is closed. */
export async function getStatus(url: string, path: string): Promise<number | "refused"> {
  try {
    const res = await fetch(`${url}${path}`, { headers: { connection: "close" } });
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    if ((err as { cause?: { code?: string } }).cause?.code === "ECONNREFUSED") return "refused";
    throw err;
  }
}

/** Whether nothing listens on the URL's port any more. */
export const portClosed = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
