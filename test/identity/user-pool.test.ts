/**
 * The conformance suite's user pool for a deployment (docs/contributing.md, "Against a deployment (QA)"):
 * `npm run admin -- identity create-users <count>` makes the users and prints each once, and the
 * suite's workers (separate processes) each take a pool entry exactly once per run
 * (conformance/harness/user-pool.ts).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../server/storage/db.ts";
import { migrations } from "../../handlers/identity/storage/migrations/index.ts";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import { verifyPassword } from "../../server/security/passwords.ts";
import { admin, ROOT, serverEnv } from "../support/server-process.ts";

const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("npm run admin -- identity create-users", () => {
  it("makes <count> users with random passwords, printed once as JSON lines, that sign in with them", async () => {
    const dataDir = tempDir("create-users-");
    const out = admin(serverEnv(dataDir), ["identity", "create-users", "3"]);
    const users = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; email: string; password: string });
    expect(users).toHaveLength(3);
    expect(new Set(users.map((u) => u.email)).size).toBe(3);
    expect(new Set(users.map((u) => u.password)).size).toBe(3);
    for (const u of users) expect(u.password.length).toBeGreaterThanOrEqual(16);
    const db = await openDatabase({ service: "identity", databaseUrl: undefined, dataDir, migrations });
    try {
      const store = createIdentityStorage(db).users;
      for (const u of users) {
        const row = await store.findByEmail(u.email);
        expect(row?.id).toBe(u.id);
        // Stored hashed: the printed password is the only copy.
        expect(row!.password_hash).not.toContain(u.password);
        expect(await verifyPassword(u.password, row!.password_hash!)).toBe(true);
      }
    } finally {
      await db.destroy();
    }
    // A second batch never collides with the first.
    const again = admin(serverEnv(dataDir), ["identity", "create-users", "1"]);
    expect(users.map((u) => u.email)).not.toContain(JSON.parse(again).email);
  }, 120_000);

  it("refuses a count that is not a whole number from 1 (exit 2, nothing made)", () => {
    const dataDir = tempDir("create-users-bad-");
    for (const count of ["0", "1.5"]) {
      expect(() => admin(serverEnv(dataDir), ["identity", "create-users", count]), count).toThrow(/whole number/);
    }
  }, 60_000);
});

describe("the pool (CONFORMANCE_IDENTITY_USERS) across worker processes", () => {
  it("each entry is taken exactly once per run, however many processes take at once, then none is left", async () => {
    const dir = tempDir("user-pool-");
    const pool = join(dir, "users.jsonl");
    const size = 40;
    writeFileSync(
      pool,
      Array.from({ length: size }, (_, i) => JSON.stringify({ id: `id-${i}`, email: `u${i}@example.com`, password: `pw-${i}` })).join(
        "\n",
      ) + "\n",
    );
    const env = { ...process.env, CONFORMANCE_IDENTITY_USERS: pool, CONFORMANCE_IDENTITY_USERS_CLAIMS: join(dir, "claims") };
    // Four processes, each taking until the pool is empty and printing what it got.
    const taker = `import { claimPoolUser } from "./conformance/harness/user-pool.ts";
const got = []; for (let u; (u = claimPoolUser()); ) got.push(u.id); console.log(JSON.stringify(got));`;
    const run = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", taker], { cwd: ROOT, env });
        let out = "";
        child.stdout.on("data", (c: Buffer) => (out += c.toString()));
        child.stderr.on("data", (c: Buffer) => (out += c.toString()));
        child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(out))));
      });
    const taken = await Promise.all([run(), run(), run(), run()]);
    const all = taken.flat();
    expect(all).toHaveLength(size);
    expect(new Set(all).size).toBe(size);
    // A new run (a new claim folder) starts from a full pool: users are not given back within a run.
    const next = await new Promise<string[]>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", taker], {
        cwd: ROOT,
        env: { ...env, CONFORMANCE_IDENTITY_USERS_CLAIMS: join(dir, "claims-2") },
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(out))));
    });
    expect(next).toHaveLength(size);
  }, 120_000);
});

describe("the repository pool (CONFORMANCE_REPOSITORY_USERS)", () => {
  it("gives each file a repository user of its own, each entry once per run, then none (the file shares CONFORMANCE_REPOSITORY_EMAIL's)", async () => {
    const dir = tempDir("repository-pool-");
    const file = join(dir, "repository-users.jsonl");
    writeFileSync(
      file,
      `${JSON.stringify({ email: "a@example.com", password: "pa" })}\n${JSON.stringify({ email: "b@example.com", password: "pb" })}\n`,
    );
    const taker = `import { claimRepositoryUser } from "./conformance/harness/user-pool.ts";
const got = []; for (let u; (u = claimRepositoryUser()); ) got.push(u.email); console.log(JSON.stringify(got));`;
    const env = { ...process.env, CONFORMANCE_REPOSITORY_USERS: file, CONFORMANCE_IDENTITY_USERS_CLAIMS: join(dir, "claims") };
    const take = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", taker], { cwd: ROOT, env });
        let out = "";
        child.stdout.on("data", (c: Buffer) => (out += c.toString()));
        child.on("error", reject);
        child.on("exit", () => resolve(JSON.parse(out.trim()) as string[]));
      });
    const taken = (await Promise.all([take(), take(), take()])).flat();
    expect(taken.sort()).toEqual(["a@example.com", "b@example.com"]);
  });
});
