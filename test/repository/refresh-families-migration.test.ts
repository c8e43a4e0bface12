/**
 * Migration 0004 of the repository service (X-RB-12) on a database with refresh tokens already in
 * it, on SQLite and PostgreSQL: each family with a revoked token becomes a revoked family, which
 * also ends a token that a refresh racing the revocation stored after it (the defect the family
 * row closes), and a live family stays live. Its `down` hands the revocations back to the token
 * rows, where an earlier version reads them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import { migrations } from "../../handlers/repository/storage/migrations.ts";
import { knexRefreshTokens } from "../../handlers/repository/storage/refresh-tokens.ts";
import type { RefreshTokenRow } from "../../handlers/repository/storage/schema.ts";
import { postgresDatabase } from "../support/postgres-database.ts";
import type { StorageKind } from "../support/storage-fixtures.ts";

const MIGRATION = "0004_revoked_refresh_families";
const AT = "2026-06-01T00:00:00.000Z";
const REVOKED_AT = "2026-06-01T01:00:00.000Z";
const LATER = "2026-06-01T02:00:00.000Z";

describe.each<StorageKind>(["sqlite", "postgres"])(`migration ${MIGRATION} on %s`, (kind) => {
  const dir = mkdtempSync(join(tmpdir(), "repository-refresh-families-"));
  const cleanups: Array<() => unknown> = [() => rmSync(dir, { recursive: true, force: true })];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  it("X-RB-12 a family with a revoked token is revoked, the token a racing refresh stored after the revocation included; a live family stays live; down marks the tokens again", async () => {
    let databaseUrl: string | undefined;
    if (kind === "postgres") databaseUrl = await postgresDatabase(dir, "repository_refresh_families", (c) => cleanups.unshift(c));
    const userId = randomUUID();
    const [revokedFamily, liveFamily] = [randomUUID(), randomUUID()];
    const token = (familyId: string, more: Partial<RefreshTokenRow> = {}): RefreshTokenRow => ({
      id: randomUUID(),
      family_id: familyId,
      user_id: userId,
      token_hash: randomUUID().replaceAll("-", ""),
      expires_at: "2026-07-01T00:00:00.000Z",
      used_at: null,
      revoked_at: null,
      created_at: AT,
      ...more,
    });
    // The revoked family as a lost race left it: the rows that existed were revoked, the winner's successor was not.
    const used = token(revokedFamily, { used_at: AT, revoked_at: REVOKED_AT });
    const escaped = token(revokedFamily);
    const live = token(liveFamily);

    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < MIGRATION));
    const old: Database = await openDatabase({ service: "repository", databaseUrl, dataDir: dir, migrations: before });
    try {
      await old("users").insert({ id: userId, email: `${userId}@example.com`, password_hash: "x", created_at: AT });
      await old("refresh_tokens").insert([used, escaped, live]);
    } finally {
      await old.destroy();
    }

    const db = await openDatabase({ service: "repository", databaseUrl, dataDir: dir, migrations });
    try {
      expect(await db("revoked_refresh_families").select("family_id", "revoked_at")).toEqual([
        { family_id: revokedFamily, revoked_at: REVOKED_AT },
      ]);
      const q = knexRefreshTokens(db);
      expect((await q.find(escaped.id))?.family_revoked_at).toBe(REVOKED_AT);
      expect(await q.rotate({ id: escaped.id, familyId: revokedFamily, at: LATER }, token(revokedFamily))).toBe(false);
      expect((await q.find(live.id))?.family_revoked_at).toBeNull();
      expect(await q.rotate({ id: live.id, familyId: liveFamily, at: LATER }, token(liveFamily))).toBe(true);

      await migrations[MIGRATION]!.down(db);
      const rows = await db("refresh_tokens").where({ family_id: revokedFamily }).select("id", "revoked_at");
      expect(rows.map((r) => r.revoked_at)).toEqual([REVOKED_AT, REVOKED_AT]);
      expect(await db.schema.hasTable("revoked_refresh_families")).toBe(false);
    } finally {
      await db.destroy();
    }
  });
});
