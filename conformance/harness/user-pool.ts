/**
 * Pre-made identity users for a run against a deployment, so the run is not bounded by the
 * deployment's registration limit (20 per client address per hour, X-ID-USR-1):
 * CONFORMANCE_IDENTITY_USERS names a file of JSON lines `{"id","email","password"}`, as
 * `npm run admin -- identity create-users <count>` prints them. `createUser` (identity-fixtures.ts)
 * takes the next unused one instead of registering; when the pool is empty it registers, and a 429
 * then skips the test with a reason (skip.ts `skipWhenRegistrationRefused`), never fails or passes it.
 *
 * Each entry is used at most once per run. Vitest runs files in parallel worker processes, so a
 * worker claims an entry by creating its claim file exclusively (`open(…, "wx")`: the kernel lets
 * exactly one creator succeed) in the run's claim folder, CONFORMANCE_IDENTITY_USERS_CLAIMS, which
 * scripts/conformance.ts makes for every run (without it, one folder per vitest process: its
 * workers are its children). Entries are not given back: tests change their users (passwords,
 * failed sign-ins, deletion), so a pool serves one run; make a fresh pool for every run.
 */
import { mkdirSync, openSync, closeSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PoolUser {
  id: string;
  email: string;
  password: string;
}

/** A pool: the variable naming its file, the fields each entry has, the command that makes them. */
interface PoolKind {
  variable: string;
  fields: string[];
  madeBy: string;
}
const IDENTITY_USERS: PoolKind = {
  variable: "CONFORMANCE_IDENTITY_USERS",
  fields: ["id", "email", "password"],
  madeBy: "npm run admin -- identity create-users",
};
const REPOSITORY_USERS: PoolKind = {
  variable: "CONFORMANCE_REPOSITORY_USERS",
  fields: ["email", "password"],
  madeBy: "npm run admin -- repository create-user",
};

/** A pool file as this process reads it: its entries, and the next one it tries (those before are claimed, by it or another worker). */
interface PoolFile {
  entries: Array<Record<string, string>>;
  next: number;
}
const read = new Map<string, PoolFile>();

function readPool(kind: PoolKind, file: string): PoolFile {
  const entries = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line, i) => {
      const entry = JSON.parse(line) as Record<string, string>;
      if (kind.fields.some((f) => !entry[f]))
        throw new Error(`${kind.variable} line ${i + 1}: expected {${kind.fields.map((f) => `"${f}"`).join(",")}} (${kind.madeBy})`);
      return entry;
    });
  return { entries, next: 0 };
}

function claimFolder(pool = ""): string {
  const base = process.env.CONFORMANCE_IDENTITY_USERS_CLAIMS ?? join(tmpdir(), `conformance-user-claims-${process.ppid}`);
  const dir = pool ? join(base, pool) : base;
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * The next entry of the pool file `file` that no other worker of this run has claimed in `folder`
 * (one claim file per entry, created exclusively), or undefined when all are taken.
 */
function claimEntry(kind: PoolKind, file: string, folder: string): Record<string, string> | undefined {
  let pool = read.get(file);
  if (!pool) read.set(file, (pool = readPool(kind, file)));
  for (; pool.next < pool.entries.length; pool.next++) {
    try {
      closeSync(openSync(join(folder, String(pool.next)), "wx"));
      return pool.entries[pool.next++];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return undefined;
}

/**
 * A repository user of its own for one test file on a deployment, from CONFORMANCE_REPOSITORY_USERS
 * (JSON lines `{"email","password"}`, each made with `npm run admin -- repository create-user`), or
 * undefined (no pool, or all taken: the file then shares CONFORMANCE_REPOSITORY_EMAIL's user).
 * A user's queued builds are what an agent of that user polls (RB-6), so two files sharing one user
 * take each other's builds; claimed as the identity pool's entries are, in the claim folder's
 * `repository/`.
 */
export function claimRepositoryUser(): { email: string; password: string } | undefined {
  const file = process.env[REPOSITORY_USERS.variable];
  if (!file) return undefined;
  const entry = claimEntry(REPOSITORY_USERS, file, claimFolder("repository"));
  return entry && { email: entry.email!, password: entry.password! };
}

/** The next pool user no other test of this run has taken, or undefined (no pool, or all taken). */
export function claimPoolUser(): PoolUser | undefined {
  const file = process.env[IDENTITY_USERS.variable];
  if (!file) return undefined;
  const entry = claimEntry(IDENTITY_USERS, file, claimFolder());
  return entry && { id: entry.id!, email: entry.email!, password: entry.password! };
}
