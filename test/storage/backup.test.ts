/** `npm run admin -- backup <dir>`: an online copy of each service's SQLite database, taken while the service writes. */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { ManualClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import { openDatabase } from "../../server/storage/db.ts";
import { createRepositoryService } from "../../handlers/repository/service.ts";
import { migrations } from "../../handlers/repository/storage/migrations.ts";

const run = promisify(execFile);
const root = mkdtempSync(join(tmpdir(), "backup-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const admin = (args: string[], env: Record<string, string>) =>
  run(process.execPath, ["--import", "tsx", "app/admin.ts", ...args], { env: { ...process.env, ...env } }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );

describe("npm run admin -- backup", () => {
  it("copies a running service's SQLite database consistently (its users and signing keys), and never overwrites a backup", async () => {
    const dataDir = join(root, "data");
    const service = await createRepositoryService(loadConfig({ DATA_DIR: dataDir }), new ManualClock(), pino({ level: "silent" }));
    const backupDir = join(root, "backup");
    try {
      await service.deps.accounts.createUser("backup@example.com", "correct horse battery");
      // Writes in flight in the running service while the copy is taken.
      const writes = Array.from({ length: 20 }, (_, i) => service.deps.accounts.createUser(`w${i}@example.com`, "correct horse battery"));
      const result = await admin(["backup", backupDir], { DATA_DIR: dataDir });
      await Promise.all(writes);
      expect(result.code, result.err).toBe(0);
      expect(result.out).toMatch(/^repository: \d+ pages copied to /m);
      expect(existsSync(join(backupDir, "identity.sqlite"))).toBe(false);
    } finally {
      await service.close();
    }
    const copy = await openDatabase({ service: "repository", databaseUrl: undefined, dataDir: backupDir, migrations });
    try {
      expect(await copy("users").where({ email: "backup@example.com" }).first()).toBeTruthy();
      expect((await copy("signing_key_ring").select("purpose")).map((r) => r.purpose).sort()).toEqual([
        "repository-agent",
        "repository-user",
      ]);
      expect(await copy.raw("PRAGMA integrity_check")).toEqual([{ integrity_check: "ok" }]);
    } finally {
      await copy.destroy();
    }
    const again = await admin(["backup", backupDir], { DATA_DIR: dataDir });
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/is not empty/);
    const postgres = await admin(["backup", join(root, "pg")], { DATA_DIR: dataDir, DATABASE_URL: "postgres://127.0.0.1:1/x" });
    expect(postgres.code).toBe(2);
    expect(postgres.err).toMatch(/pg_dump/);
  });
});
