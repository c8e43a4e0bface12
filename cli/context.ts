/** What every command gets: parsed arguments, where to talk, where to store, where to print. */
import { ApiClient } from "./api-client.ts";
import type { ConfigStore } from "./config-store.ts";
import { UsageError } from "./errors.ts";
import { UserSession } from "./session.ts";

export const DEFAULT_SERVER = "http://127.0.0.1:3002";

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

export interface Context {
  /** Positional arguments after the command words (`rb repo show <id>` → `[id]`). */
  args: string[];
  options: Record<string, string | boolean | undefined>;
  json: boolean;
  store: ConfigStore;
  api: ApiClient;
  session: UserSession;
  io: Output;
}

/** `--server`, else `RB_SERVER`, else the server of the last login, else the local default. */
export function resolveServer(flag: string | undefined, env: NodeJS.ProcessEnv, store: ConfigStore): string {
  const raw = flag ?? (env.RB_SERVER || undefined) ?? store.load().server ?? DEFAULT_SERVER;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`Not a server URL: ${raw} (expected e.g. ${DEFAULT_SERVER})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`Not an http(s) server URL: ${raw}`);
  if (url.search || url.hash) throw new UsageError(`A server URL has no query or fragment: ${raw}`);
  // One spelling per server, so "stored tokens belong to this server" is a string comparison.
  return url.toString().replace(/\/+$/, "");
}

export function createContext(init: {
  server: string;
  store: ConfigStore;
  args: string[];
  options: Context["options"];
  io: Output;
}): Context {
  const api = new ApiClient(init.server);
  return {
    args: init.args,
    options: init.options,
    json: init.options.json === true,
    store: init.store,
    api,
    session: new UserSession(init.store, api),
    io: init.io,
  };
}
