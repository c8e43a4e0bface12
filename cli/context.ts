/** What every command gets: checked arguments and options, where to talk, where to store, where to print. */
import { ApiClient } from "./api-client.ts";
import type { ConfigStore } from "./config-store.ts";
import { UsageError } from "./errors.ts";
import type { OptionValue } from "./options.ts";
import { UserSession } from "./session.ts";

export const DEFAULT_SERVER = "http://127.0.0.1:3002";

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

/** What a command that needs no server gets (`rb help`, `rb version`, `rb completion`). */
export interface LocalContext {
  /** Positional arguments after the command words (`rb repo show <id>` → `[id]`), already counted. */
  args: string[];
  /** The options given, with checked values (`options.ts`). */
  options: Record<string, OptionValue | undefined>;
  json: boolean;
  io: Output;
  env: NodeJS.ProcessEnv;
  /** Time, waiting and Ctrl-C for commands that wait (`rb login --device` polls): injected so tests never wait real seconds. */
  runtime: Runtime;
}

export interface Runtime {
  now(): number;
  /** Waits `ms` milliseconds; rejects with `Interrupted` when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Aborts the wait when the user presses Ctrl-C; undefined: the command listens for SIGINT itself. */
  signal?: AbortSignal;
}

export interface Context extends LocalContext {
  /** The server this command talks to, and which setting named it. */
  server: ResolvedServer;
  store: ConfigStore;
  api: ApiClient;
  session: UserSession;
}

/** Which setting named the server, strongest first: a flag, the environment, the config file, the default. */
export type ServerSource = "--server" | "RB_SERVER" | "config file" | "default";

export interface ResolvedServer {
  url: string;
  source: ServerSource;
}

/** `--server`, else `RB_SERVER`, else the server of the last login, else the local default. */
export function resolveServer(flag: string | undefined, env: NodeJS.ProcessEnv, store: ConfigStore): ResolvedServer {
  const [raw, source] = serverSetting(flag, env, store);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`Not a server URL: ${raw} (expected e.g. ${DEFAULT_SERVER})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`Not an http(s) server URL: ${raw}`);
  if (url.search || url.hash) throw new UsageError(`A server URL has no query or fragment: ${raw}`);
  // One spelling per server, so "stored tokens belong to this server" is a string comparison.
  return { url: url.toString().replace(/\/+$/, ""), source };
}

function serverSetting(flag: string | undefined, env: NodeJS.ProcessEnv, store: ConfigStore): [string, ServerSource] {
  if (flag !== undefined) return [flag, "--server"];
  if (env.RB_SERVER) return [env.RB_SERVER, "RB_SERVER"];
  const stored = store.load().server;
  return stored ? [stored, "config file"] : [DEFAULT_SERVER, "default"];
}

export function createContext(init: LocalContext & { server: ResolvedServer; store: ConfigStore }): Context {
  const api = new ApiClient(init.server.url);
  return { ...init, api, session: new UserSession(init.store, api, init.env) };
}
