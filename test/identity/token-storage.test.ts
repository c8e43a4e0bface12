/**
 * The token endpoint's storage (handlers/identity/storage/grants.ts and its SQLite and PostgreSQL
 * implementations, and the applications store's client lookup) on
 * SQLite and PostgreSQL, below HTTP: of concurrent redemptions of one code exactly one wins and
 * only its grant and refresh token are stored; of concurrent rotations of one refresh token
 * exactly one wins, with one child, the parent's grace answer forgotten and the grant's end moved
 * only for it. On PostgreSQL each write is one statement of data-modifying CTEs, so this is where
 * its single-use rule is proved. And a prepared client lookup survives a migration that adds a
 * column to `applications` under a running instance (PostgreSQL keeps the result type of a
 * prepared statement's plan).
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type GrantStore, knexGrants } from "../../handlers/identity/storage/grants.ts";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import type { Database } from "../../server/storage/db.ts";
import { pgPrepared } from "../../server/storage/postgres/statements.ts";
import type { GrantRow, RefreshRow } from "../../handlers/identity/storage/schema.ts";
import { identityDbWithParents, openIdentityDb, type StorageKind } from "../support/storage-fixtures.ts";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const DAY = 24 * 3600 * 1000;

describe.each<StorageKind>(["sqlite", "postgres"])("token endpoint storage on %s", (kind) => {
  const t = identityDbWithParents(kind);
  const { ids } = t;

  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await t.db(table).where(where).count({ n: "*" }).first()) as { n: number | string }).n);
  const newGrant = (): GrantRow => ({
    id: randomUUID(),
    application_id: ids.app,
    user_id: ids.user,
    scopes: '["openid"]',
    auth_time: iso(NOW),
    created_at: iso(NOW),
    revoked_at: null,
    ends_at: iso(NOW + DAY),
  });
  const newRefresh = (grantId: string, parentId: string | null = null): RefreshRow => ({
    id: randomUUID(),
    token_hash: randomUUID().replaceAll("-", ""),
    grant_id: grantId,
    parent_id: parentId,
    created_at: iso(NOW),
    expires_at: iso(NOW + 30 * DAY),
    used_at: null,
    child_id: null,
    rotation_answer: null,
  });
  const insertCode = async (codeHash: string) =>
    t.db("oauth_codes").insert({
      code_hash: codeHash,
      grant_id: randomUUID(),
      application_id: ids.app,
      user_id: ids.user,
      redirect_uri: "https://a.example/cb",
      scopes: '["openid"]',
      code_challenge: null,
      code_challenge_method: null,
      nonce: null,
      auth_time: iso(NOW),
      created_at: iso(NOW),
      expires_at: iso(NOW + 600_000),
      consumed_at: null,
    });

  // The store the service picks for the database, and the portable knex implementation it builds on.
  describe.each<[string, (db: Database) => GrantStore]>([
    ["the implementation chosen for the database", (db) => createIdentityStorage(db).grants],
    ["the knex implementation", knexGrants],
  ])("%s", (_name, grantsOf) => {
    it("ID-CODE-2 of concurrent redemptions of one code exactly one wins; only the winner's grant and refresh token are stored", async () => {
      const hot = grantsOf(t.db);
      const codeHash = randomUUID().replaceAll("-", "");
      await insertCode(codeHash);
      expect((await hot.findCodeForExchange(codeHash))?.user?.id).toBe(ids.user);
      const attempts = Array.from({ length: 8 }, () => {
        const grant = newGrant();
        return { grant, refresh: newRefresh(grant.id) };
      });
      const won = await Promise.all(attempts.map((a) => hot.redeemCode({ codeHash, now: iso(NOW + 1000), ...a })));
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = attempts[won.indexOf(true)]!;
      for (const a of attempts) {
        const stored = a === winner ? 1 : 0;
        expect(await count("oauth_grants", { id: a.grant.id })).toBe(stored);
        expect(await count("oauth_refresh_tokens", { id: a.refresh.id })).toBe(stored);
      }
      // A used code, or an expired one, wins nothing and stores nothing.
      const late = newGrant();
      expect(await hot.redeemCode({ codeHash, now: iso(NOW + 2000), grant: late, refresh: undefined })).toBe(false);
      const expiredHash = randomUUID().replaceAll("-", "");
      await insertCode(expiredHash);
      expect(await hot.redeemCode({ codeHash: expiredHash, now: iso(NOW + 700_000), grant: late, refresh: undefined })).toBe(false);
      expect(await count("oauth_grants", { id: late.id })).toBe(0);
    });

    it("a redemption without offline_access stores the grant and no refresh token", async () => {
      const hot = grantsOf(t.db);
      const codeHash = randomUUID().replaceAll("-", "");
      await insertCode(codeHash);
      const grant = newGrant();
      expect(await hot.redeemCode({ codeHash, now: iso(NOW + 1000), grant, refresh: undefined })).toBe(true);
      expect(await count("oauth_grants", { id: grant.id })).toBe(1);
      expect(await count("oauth_refresh_tokens", { grant_id: grant.id })).toBe(0);
    });

    it("X-ID-TOK-2 of concurrent rotations of one refresh token exactly one wins: one child, the parent's answer forgotten, the grant's end moved", async () => {
      const hot = grantsOf(t.db);
      const grant = newGrant();
      await t.db("oauth_grants").insert(grant);
      const parent = { ...newRefresh(grant.id), used_at: iso(NOW), rotation_answer: "sealed-parent" };
      const token = newRefresh(grant.id, parent.id);
      await t.db("oauth_refresh_tokens").insert([parent, token]);
      expect((await hot.findRefreshForRotation(token.token_hash))?.grant?.id).toBe(grant.id);

      const children = Array.from({ length: 8 }, () => newRefresh(grant.id, token.id));
      const endsAt = iso(NOW + 40 * DAY);
      const won = await Promise.all(
        children.map((child) =>
          hot.rotateRefresh({
            rowId: token.id,
            parentId: parent.id,
            child,
            sealedAnswer: "sealed",
            now: iso(NOW + 1000),
            grantEndsAt: endsAt,
          }),
        ),
      );
      expect(won.filter(Boolean)).toHaveLength(1);
      const winner = children[won.indexOf(true)]!;
      expect(await count("oauth_refresh_tokens", { grant_id: grant.id })).toBe(3);
      expect(await t.db("oauth_refresh_tokens").where({ id: token.id }).first("child_id", "rotation_answer")).toEqual({
        child_id: winner.id,
        rotation_answer: "sealed",
      });
      expect((await t.db("oauth_refresh_tokens").where({ id: parent.id }).first("rotation_answer")).rotation_answer).toBeNull();
      expect((await t.db("oauth_grants").where({ id: grant.id }).first("ends_at")).ends_at).toBe(endsAt);
    });

    it("a rotation that loses changes nothing: no child, the parent's answer kept, the grant's end not moved", async () => {
      const hot = grantsOf(t.db);
      const grant = newGrant();
      await t.db("oauth_grants").insert(grant);
      const parent = { ...newRefresh(grant.id), used_at: iso(NOW), rotation_answer: "sealed-parent" };
      const used = { ...newRefresh(grant.id, parent.id), used_at: iso(NOW) };
      await t.db("oauth_refresh_tokens").insert([parent, used]);
      const child = newRefresh(grant.id, used.id);
      const lost = await hot.rotateRefresh({
        rowId: used.id,
        parentId: parent.id,
        child,
        sealedAnswer: "x",
        now: iso(NOW + 1000),
        grantEndsAt: iso(NOW + 40 * DAY),
      });
      expect(lost).toBe(false);
      expect(await count("oauth_refresh_tokens", { id: child.id })).toBe(0);
      expect((await t.db("oauth_refresh_tokens").where({ id: parent.id }).first("rotation_answer")).rotation_answer).toBe("sealed-parent");
      expect((await t.db("oauth_grants").where({ id: grant.id }).first("ends_at")).ends_at).toBe(grant.ends_at);
    });
  });

  it("a prepared client lookup still answers after a migration adds a column to applications", async () => {
    const clientId = `client-${ids.app}`;
    const { applications } = createIdentityStorage(t.db);
    const lookup = (clientId: string, now: string) => applications.findClient(clientId, now);
    expect((await lookup(clientId, iso(NOW)))?.application.id).toBe(ids.app);
    await t.db.schema.alterTable("applications", (a) => a.string("added_by_a_later_migration"));
    try {
      // Every connection of the pool: each prepared the statement before the column existed.
      const again = await Promise.all(Array.from({ length: 12 }, () => lookup(clientId, iso(NOW))));
      for (const found of again) expect(found?.application.id).toBe(ids.app);
    } finally {
      await t.db.schema.alterTable("applications", (a) => a.dropColumn("added_by_a_later_migration"));
    }
  });
});

describe("named prepared statements on PostgreSQL", () => {
  it("a statement whose result a schema change altered is prepared again, once, on each connection", async () => {
    const t = await openIdentityDb("postgres");
    try {
      await t.db.schema.createTable("prepared_probe", (p) => p.string("a"));
      await t.db("prepared_probe").insert({ a: "x" });
      const run = pgPrepared(t.db, "probe", { all: "SELECT * FROM prepared_probe" });
      // Prepared on several connections of the pool, then the table's columns change under them.
      await Promise.all(Array.from({ length: 6 }, () => run("all", [])));
      await t.db.schema.alterTable("prepared_probe", (p) => p.string("b"));
      const rows = await Promise.all(Array.from({ length: 12 }, () => run("all", [])));
      for (const r of rows) expect(r).toEqual([{ a: "x", b: null }]);
      // Any other error is the caller's.
      const broken = pgPrepared(t.db, "probe", { missing: "SELECT * FROM no_such_table" });
      await expect(broken("missing", [])).rejects.toThrow(/no_such_table/);
    } finally {
      await t.close();
    }
  }, 120_000);
});
