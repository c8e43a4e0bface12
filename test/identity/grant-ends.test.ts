/**
 * The end of a grant (`oauth_grants.ends_at`, domain/oauth/grant-end.ts), which the retention purge
 * counts from, is never before the true end of what was issued from the grant, so purging ended
 * grants cannot end a live token (a missing grant reads as ended, X-ID-TOK-5):
 * - the rule: an exchange's end covers its access token and its refresh token; a rotation moves it
 *   past the new refresh token, but only when needed (the token endpoint's hot path);
 * - storage: a revocation brings it back to the revocation, a move only ever goes later and never
 *   for a revoked grant;
 * - migration 0009 gives existing grants the end of what they hold, on SQLite and PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { migrations } from "../../handlers/identity/storage/migrations/index.ts";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import { GRANT_END_SLACK_SECONDS, grantEndsAt, movedGrantEnd } from "../../handlers/identity/domain/oauth/grant-end.ts";
import { REFRESH_TTL_SECONDS } from "../../handlers/identity/domain/oauth/grants/issue.ts";
import { identityDbWithParents, openServiceDb, seedParents, type StorageKind } from "../support/storage-fixtures.ts";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();
const HOUR = 3600_000;
const DAY = 24 * HOUR;
type Parents = { app: string; user: string };

/** A grant of the parents' application to their user, made at NOW; `ends_at` only when given (migration 0009 added it). */
const grantRow = (ids: Parents, id: string, o: { revokedAt?: string | null; endsAt?: string | null } = {}) => ({
  id,
  application_id: ids.app,
  user_id: ids.user,
  scopes: "[]",
  auth_time: iso(NOW),
  created_at: iso(NOW),
  revoked_at: o.revokedAt ?? null,
  ...(o.endsAt !== undefined ? { ends_at: o.endsAt } : {}),
});

describe("a grant's end (domain rule)", () => {
  it("an exchange ends with its refresh token when it has one, else with its access token (1 hour)", () => {
    expect(grantEndsAt(NOW, undefined)).toBe(iso(NOW + HOUR));
    expect(grantEndsAt(NOW, iso(NOW + REFRESH_TTL_SECONDS * 1000))).toBe(iso(NOW + 30 * DAY));
  });

  it("a rotation moves the end a day past its refresh token only when the token would outlive it", () => {
    const child = iso(NOW + 30 * DAY);
    expect(movedGrantEnd(iso(NOW + 29 * DAY), child)).toBe(iso(NOW + 30 * DAY + GRANT_END_SLACK_SECONDS * 1000));
    expect(movedGrantEnd(null, child)).toBe(iso(NOW + 31 * DAY));
    // Within the slack: no write on this rotation.
    expect(movedGrantEnd(iso(NOW + 30 * DAY + HOUR), child)).toBeUndefined();
    expect(movedGrantEnd(child, child)).toBeUndefined();
  });
});

describe.each<StorageKind>(["sqlite", "postgres"])("a grant's end in storage on %s", (kind) => {
  const t = identityDbWithParents(kind);
  const { ids } = t;

  const grant = async (endsAt: string | null, revokedAt: string | null = null) => {
    const id = randomUUID();
    await t.db("oauth_grants").insert(grantRow(ids, id, { revokedAt, endsAt }));
    return id;
  };
  const endOf = async (id: string) => ((await t.db("oauth_grants").where({ id }).first("ends_at")) as { ends_at: string | null }).ends_at;

  it("revoking brings the end back to the revocation, or keeps an earlier one", async () => {
    const q = createIdentityStorage(t.db).grants;
    const live = await grant(iso(NOW + 30 * DAY));
    await q.revokeGrant(live, iso(NOW + HOUR));
    expect(await endOf(live)).toBe(iso(NOW + HOUR));
    const ended = await grant(iso(NOW - DAY));
    await q.revokeGrant(ended, iso(NOW));
    expect(await endOf(ended)).toBe(iso(NOW - DAY));
  });

  it("a rotation moves the end later in the rotation's own transaction, never earlier and never for a revoked grant", async () => {
    const hot = createIdentityStorage(t.db).grants;
    const rotate = async (grantId: string, grantEndsAt: string) => {
      const parent = {
        id: randomUUID(),
        token_hash: randomUUID(),
        grant_id: grantId,
        parent_id: null,
        created_at: iso(NOW),
        expires_at: iso(NOW + DAY),
        used_at: null,
        child_id: null,
        rotation_answer: null,
      };
      await t.db("oauth_refresh_tokens").insert(parent);
      const child = { ...parent, id: randomUUID(), token_hash: randomUUID(), parent_id: parent.id, expires_at: iso(NOW + 30 * DAY) };
      expect(await hot.rotateRefresh({ rowId: parent.id, parentId: null, child, sealedAnswer: "x", now: iso(NOW), grantEndsAt })).toBe(
        true,
      );
    };
    const g = await grant(iso(NOW + 29 * DAY));
    await rotate(g, iso(NOW + 31 * DAY));
    expect(await endOf(g)).toBe(iso(NOW + 31 * DAY));
    await rotate(g, iso(NOW + 30 * DAY)); // a slower concurrent rotation: the later end stays
    expect(await endOf(g)).toBe(iso(NOW + 31 * DAY));
    const revoked = await grant(iso(NOW), iso(NOW));
    await rotate(revoked, iso(NOW + 31 * DAY)); // raced a revocation: the revocation's end stays
    expect(await endOf(revoked)).toBe(iso(NOW));
  });
});

describe.each<StorageKind>(["sqlite", "postgres"])("migration 0009 on %s", (kind) => {
  it("existing grants end with the latest of their refresh tokens, or an hour after they were made, or when revoked", async () => {
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0009"));
    const ids = { org: randomUUID(), app: randomUUID(), user: randomUUID() };
    const t = await openServiceDb(kind, "identity", before);
    const [plain, family, revoked] = [randomUUID(), randomUUID(), randomUUID()];
    try {
      await seedParents(t.db, ids);
      await t
        .db("oauth_grants")
        .insert([grantRow(ids, plain), grantRow(ids, family), grantRow(ids, revoked, { revokedAt: iso(NOW + 2 * DAY) })]);
      const r = (grantId: string, expiresAt: string) => ({
        id: randomUUID(),
        token_hash: randomUUID(),
        grant_id: grantId,
        created_at: iso(NOW),
        expires_at: expiresAt,
      });
      await t
        .db("oauth_refresh_tokens")
        .insert([r(family, iso(NOW + 30 * DAY)), r(family, iso(NOW + 40 * DAY)), r(revoked, iso(NOW + 30 * DAY))]);
      await t.migrateTo(migrations);
      const ends = Object.fromEntries(
        ((await t.db("oauth_grants").select("id", "ends_at")) as Array<{ id: string; ends_at: string }>).map((x) => [x.id, x.ends_at]),
      );
      expect(ends).toEqual({ [plain]: iso(NOW + HOUR), [family]: iso(NOW + 40 * DAY), [revoked]: iso(NOW + 2 * DAY) });
    } finally {
      await t.close();
    }
  }, 120_000);
});
