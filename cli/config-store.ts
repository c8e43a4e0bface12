/**
 * The client's local state: `$XDG_CONFIG_HOME/rb/config.json` (default `~/.config/rb/config.json`).
 * It holds bearer tokens, so the directory is 0700 and the file 0600, and every write goes through a
 * temp file in the same directory plus rename: a crash or a concurrent reader never sees half a file
 * (and never a freshly rotated refresh token half-saved, which would log the user out).
 */
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import type { components } from "../generated/sdk/types/repository.ts";
import { CliError } from "./errors.ts";

export type TokenPair = components["schemas"]["TokenPair"];

/**
 * The user's stored tokens: the repository's own pair (`rb login`), or an identity service's
 * (`rb login --device`), whose refresh token is absent when the issuer granted no `offline_access`.
 */
export type StoredTokens = Omit<TokenPair, "refreshToken"> & { refreshToken?: string };

/**
 * Where the stored tokens came from when `rb login --device` made them (X-CLI-8): their refreshes
 * and their revocation go to this issuer, as this client, for this resource; never to the server.
 */
export interface StoredIssuer {
  url: string;
  clientId: string;
  resource?: string;
}

export interface StoredAgent {
  id: string;
  name: string;
  agentToken: string;
  expiresAt: string;
  /** The server that issued the token: it is never sent anywhere else. */
  server: string;
}

export interface StoredConfig {
  /** The server of the last login; also the default server. */
  server?: string;
  email?: string;
  tokens?: StoredTokens;
  agent?: StoredAgent;
  /** Set by `rb login --device`, removed by `rb login`: the issuer of `tokens`. */
  issuer?: StoredIssuer;
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  // XDG Base Directory spec: a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg?.startsWith("/") ? xdg : join(homedir(), ".config");
  return join(base, "rb", "config.json");
}

export class ConfigStore {
  readonly path: string;
  private readonly dir: string;

  constructor(path = defaultConfigPath()) {
    this.path = path;
    this.dir = dirname(path);
  }

  load(): StoredConfig {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw new CliError(`Cannot read ${this.path}: ${(err as Error).message}`);
    }
    this.tightenMode();
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
      return value as StoredConfig;
    } catch {
      throw new CliError(`${this.path} is not valid JSON. Fix it, or delete it and run \`rb login\`.`);
    }
  }

  save(config: StoredConfig): void {
    this.ensureDir();
    const tmp = join(this.dir, `.config.json.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      // `wx` + mode: the temp file never exists with wider permissions, even for an instant.
      const fd = openSync(tmp, "wx", 0o600);
      try {
        writeSync(fd, JSON.stringify(config, null, 2) + "\n");
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      chmodSync(tmp, 0o600); // the umask can only remove bits, but be explicit
      renameSync(tmp, this.path);
    } catch (err) {
      try {
        unlinkSync(tmp);
      } catch {
        /* already gone */
      }
      throw new CliError(`Cannot write ${this.path}: ${(err as Error).message}`);
    }
  }

  /** Reads, changes and saves under the lock, so two `rb` processes do not overwrite each other. */
  async update(change: (config: StoredConfig) => StoredConfig): Promise<StoredConfig> {
    return this.withLock(async () => {
      const next = change(this.load());
      this.save(next);
      return next;
    });
  }

  /**
   * An exclusive lock file next to the config. Refresh tokens are single-use and reusing one revokes
   * the whole session, so two commands refreshing at once must take turns: the second one then finds
   * the already rotated pair in the file instead of replaying the old token.
   */
  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    this.ensureDir();
    const lock = `${this.path}.lock`;
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        closeSync(openSync(lock, "wx", 0o600));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw new CliError(`Cannot lock ${this.path}: ${(err as Error).message}`);
        // A lock older than any refresh could take was left by a killed process.
        try {
          if (Date.now() - statSync(lock).mtimeMs > 30_000) unlinkSync(lock);
        } catch {
          /* released meanwhile */
        }
        if (Date.now() > deadline) throw new CliError(`${lock} is held by another rb process. If none is running, delete it.`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    try {
      return await fn();
    } finally {
      try {
        unlinkSync(lock);
      } catch {
        /* nothing to release */
      }
    }
  }

  private ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
  }

  /** A file copied in with looser permissions must not stay readable by others. */
  private tightenMode(): void {
    try {
      if ((statSync(this.path).mode & 0o077) !== 0) chmodSync(this.path, 0o600);
    } catch {
      /* best effort: reading still works */
    }
  }
}
