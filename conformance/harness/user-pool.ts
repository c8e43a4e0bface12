/**
 * Pre-made identity users for a run against a deployment, so the run is not bounded by the
 * deployment's registration limit (20 per client address per hour, X-ID-USR-1):
 * CONFORMANCE_IDENTITY_USERS names a file of JSON lines `{"id","email","password"}`, as
 * `npm run admin -- identity create-users <count>` prints them. `createUser` (identity-fixtures.ts) takes the
 * next unused one instead of registering; when the pool is empty it registers, and a 429 then skips
 * the test with a reason (skip.ts `skipWhenRegistrationRefused`), never fails or passes it.
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

let entries: PoolUser[] | undefined;
/** The next entry this process tries; entries before it are claimed (by it or by another worker). */
let next = 0;

function poolEntries(file: string): PoolUser[] {
  if (entries) return entries;
  entries = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line, i) => {
      const entry = JSON.parse(line) as Partial<PoolUser>;
      if (!entry.id || !entry.email || !entry.password)
        throw new Error(
          `CONFORMANCE_IDENTITY_USERS line ${i + 1}: expected {"id","email","password"} (npm run admin -- identity create-users)`,
        );
      return entry as PoolUser;
    });
  return entries;
}

function claimFolder(pool = ""): string {
  const base = process.env.CONFORMANCE_IDENTITY_USERS_CLAIMS ?? join(tmpdir(), `conformance-user-claims-${process.ppid}`);
  const dir = pool ? join(base, pool) : base;
  mkdirSync(dir, { recursive: true });
  return dir;
}

let repositoryEntries: Array<{ email: string; password: string }> | undefined;
let repositoryNext = 0;
/**
 * A repository user of its own for one test file on a deployment, from CONFORMANCE_REPOSITORY_USERS
 * (JSON lines `{"email","password"}`, each made with `npm run admin -- repository create-user`), or
 * undefined (no pool, or all taken: the file then shares CONFORMANCE_REPOSITORY_EMAIL's user).
 * A user's queued builds are what an agent of that user polls (RB-6), so two files sharing one user
 * take each other's builds; claimed as the identity pool's entries are, in the claim folder's
 * `repository/`.
 */
export function claimRepositoryUser(): { email: string; password: string } | undefined {
  const file = process.env.CONFORMANCE_REPOSITORY_USERS;
  if (!file) return undefined;
  repositoryEntries ??= readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as { email: string; password: string });
  const dir = claimFolder("repository");
  for (; repositoryNext < repositoryEntries.length; repositoryNext++) {
    try {
      closeSync(openSync(join(dir, String(repositoryNext)), "wx"));
      return repositoryEntries[repositoryNext++];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return undefined;
}

/** The next pool user no other test of this run has taken, or undefined (no pool, or all taken). */
export function claimPoolUser(): PoolUser | undefined {
  const file = process.env.CONFORMANCE_IDENTITY_USERS;
  if (!file) return undefined;
  const pool = poolEntries(file);
  const dir = claimFolder();
  for (; next < pool.length; next++) {
    try {
      closeSync(openSync(join(dir, String(next)), "wx"));
      return pool[next++];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return undefined;
}
