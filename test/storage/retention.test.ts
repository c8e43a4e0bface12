/**
 * Retention (server/storage/retention.ts with identity's rules): rows past their period go, rows
 * within it stay, in batches of at most the configured size, on SQLite and PostgreSQL; and the
 * configuration refuses a throttle period that would lift lockouts early.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { loadConfig } from "../../app/load-config.ts";
import { createPurger, PurgeError } from "../../server/storage/retention.ts";
import { uuidv7Floor } from "../../server/ids.ts";
import { identityRetentionRules } from "../../handlers/identity/storage/retention-rules.ts";
import { identityRetentionOf } from "../../handlers/identity/config.ts";
import type { Database } from "../../server/storage/db.ts";
import { identityDbWithParents, openIdentityDb, seedParents, type IdentityDb, type StorageKind } from "../support/storage-fixtures.ts";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();
const HOUR = 3600;
const DAY = 24 * HOUR;
const BATCH = 10;

const count = async (t: { db: Database }, table: string) =>
  Number(((await t.db(table).count({ n: "*" }).first()) as { n: number | string }).n);
/** A UUIDv7 of millisecond `ms` (the service's generator never goes back in time, so it cannot make old ones). */
const idAt = (ms: number) => uuidv7Floor(ms).slice(0, 24) + randomUUID().slice(24);
const times = <T>(n: number, f: (i: number) => T) => Array.from({ length: n }, (_, i) => f(i));

/** An authorization code of the parents' application to their user, made a day ago. */
const codeRow = (ids: { app: string; user: string }, expiresAt: string) => ({
  code_hash: randomUUID(),
  grant_id: randomUUID(),
  application_id: ids.app,
  user_id: ids.user,
  redirect_uri: "https://a.example/cb",
  scopes: "[]",
  auth_time: ago(DAY),
  created_at: ago(DAY),
  expires_at: expiresAt,
});

describe.each<StorageKind>(["sqlite", "postgres"])("retention purge on %s", (kind) => {
  let t: IdentityDb;
  const ids = { org: randomUUID(), app: randomUUID(), user: randomUUID() };
  const grant = randomUUID();
  const endpoint = randomUUID();

  beforeAll(async () => {
    t = await openIdentityDb(kind);
    const { db } = t;
    await seedParents(db, ids);
    const code = (expiresAt: string) => codeRow(ids, expiresAt);
    await db("oauth_codes").insert([
      ...times(25, () => code(ago(2 * DAY))),
      ...times(3, () => code(ago(HOUR))),
      ...times(2, () => code(ago(-600))),
    ]);
    const grantRow = (id: string, endsAt: string, revokedAt: string | null = null) => ({
      id,
      application_id: ids.app,
      user_id: ids.user,
      scopes: "[]",
      auth_time: ago(40 * DAY),
      created_at: ago(40 * DAY),
      revoked_at: revokedAt,
      ends_at: endsAt,
    });
    // A live family (its last refresh token expires tomorrow), one ended an hour ago (within the
    // period), and 12 revoked two days ago whose refresh tokens had not expired yet: the purge
    // deletes those 12 and, by cascade, their tokens.
    const revokedGrants = times(12, () => randomUUID());
    await db("oauth_grants").insert([
      grantRow(grant, ago(-DAY)),
      grantRow(randomUUID(), ago(HOUR)),
      ...revokedGrants.map((id) => grantRow(id, ago(2 * DAY), ago(2 * DAY))),
    ]);
    await db("oauth_refresh_tokens").insert(
      revokedGrants.map((id) => ({
        id: randomUUID(),
        token_hash: randomUUID(),
        grant_id: id,
        created_at: ago(3 * DAY),
        expires_at: ago(-27 * DAY),
      })),
    );
    const refresh = (expiresAt: string, used: boolean) => ({
      id: randomUUID(),
      token_hash: randomUUID(),
      grant_id: grant,
      created_at: ago(40 * DAY),
      expires_at: expiresAt,
      used_at: used ? ago(35 * DAY) : null,
    });
    await db("oauth_refresh_tokens").insert([
      ...times(25, (i) => refresh(ago(2 * DAY), i % 2 === 0)),
      refresh(ago(HOUR), true),
      refresh(ago(-DAY), true),
      refresh(ago(-DAY), false),
    ]);
    await db("oauth_revoked_access_tokens").insert([
      ...times(12, () => ({ jti: randomUUID(), expires_at: ago(2 * HOUR) })),
      { jti: randomUUID(), expires_at: ago(HOUR / 2) },
    ]);
    const session = (expiresAt: string) => ({
      id_hash: randomUUID(),
      user_id: ids.user,
      auth_time: ago(8 * DAY),
      created_at: ago(8 * DAY),
      expires_at: expiresAt,
    });
    await db("oauth_sessions").insert([...times(12, () => session(ago(2 * DAY))), session(ago(-DAY))]);
    await db("oauth_signin_failures").insert([
      ...times(12, () => ({ key: "account:a@example.com", failed_at: ago(2 * DAY) })),
      { key: "account:a@example.com", failed_at: ago(HOUR) },
    ]);
    await db("registration_attempts").insert([
      ...times(12, () => ({ address: "203.0.113.9", at: ago(2 * DAY) })),
      { address: "203.0.113.9", at: ago(HOUR) },
    ]);
    // Known for 30 days after the last sign-in from them (LOGIN_KNOWN_ADDRESS_SECONDS).
    await db("oauth_signin_known_addresses").insert([
      ...times(12, (i) => ({ key: `pair:203.0.113.${i}|a@example.com`, last_success_at: ago(31 * DAY) })),
      { key: "pair:203.0.113.99|a@example.com", last_success_at: ago(29 * DAY) },
    ]);
    // The audit log: kept 90 days from the event (IDENTITY_RETENTION_AUDIT_SECONDS).
    const auditEvent = (occurredAt: string) => ({
      id: randomUUID(),
      type: "user.signed_in",
      occurred_at: occurredAt,
      actor_type: "user",
      details: "{}",
    });
    await db("audit_events").insert([...times(12, () => auditEvent(ago(91 * DAY))), auditEvent(ago(89 * DAY))]);
    // Password reset requests: counted by the limits, so kept as long as sign-in failures.
    const resetRequest = (createdAt: string) => ({
      id: randomUUID(),
      token_hash: randomUUID(),
      email_key: "a".repeat(64),
      client_address: "203.0.113.9",
      created_at: createdAt,
      expires_at: createdAt,
    });
    await db("password_resets").insert([...times(12, () => resetRequest(ago(2 * DAY))), resetRequest(ago(HOUR))]);
    // Passkey challenges: as short-lived as codes, used or not (X-ID-PK-2).
    const passkeyChallenge = (expiresAt: string, consumedAt: string | null) => ({
      challenge: randomUUID(),
      purpose: "authentication",
      binding: randomUUID(),
      user_id: null,
      expires_at: expiresAt,
      consumed_at: consumedAt,
    });
    await db("passkey_challenges").insert([
      ...times(6, () => passkeyChallenge(ago(2 * DAY), null)),
      ...times(6, () => passkeyChallenge(ago(2 * DAY), ago(2 * DAY))),
      passkeyChallenge(ago(HOUR), ago(HOUR)),
      passkeyChallenge(ago(-600), null),
    ]);
    // DPoP proofs (X-ID-DPOP-2): kept while their iat window lasts, then as long as codes.
    const dpopProof = (expiresAt: string) => ({ proof_key: randomUUID().replaceAll("-", ""), expires_at: expiresAt });
    await db("oauth_dpop_proofs").insert([...times(12, () => dpopProof(ago(2 * DAY))), dpopProof(ago(-60))]);

    // private_key_jwt assertion ids (X-ID-CC-7): kept until the assertion expires, then as long as codes.
    const assertionId = (expiresAt: string) => ({ jti: randomUUID(), application_id: ids.app, expires_at: expiresAt });
    await db("client_assertion_jtis").insert([...times(12, () => assertionId(ago(2 * DAY))), assertionId(ago(-60))]);

    const old = NOW - 31 * DAY * 1000;
    const delivery = (id: string, status: string) => ({
      id,
      event_id: randomUUID(),
      endpoint_id: endpoint,
      event_type: "user.created",
      body: "{}",
      status,
      attempts_made: 1,
      next_attempt_at: status === "pending" ? ago(0) : null,
      next_trigger: "retry",
      auto_retry: true,
      created_at: ago(31 * DAY),
      updated_at: ago(31 * DAY),
    });
    await db("webhook_deliveries").insert([
      ...times(12, () => delivery(idAt(old), "succeeded")),
      delivery(idAt(old), "pending"),
      delivery(idAt(NOW), "failed"),
    ]);
    const attempt = (id: string) => ({
      id,
      delivery_id: randomUUID(),
      endpoint_id: endpoint,
      event_id: randomUUID(),
      event_type: "user.created",
      attempt_number: 1,
      trigger: "event",
      status_code: 204,
      success: true,
      duration_ms: 5,
      attempted_at: ago(31 * DAY),
    });
    await db("webhook_attempts").insert([...times(25, () => attempt(idAt(old))), attempt(idAt(NOW)), attempt(idAt(NOW))]);
    await db("webhook_events").insert([
      ...times(12, () => ({ id: randomUUID(), type: "user.created", data: "{}", created_at: ago(31 * DAY) })),
      { id: randomUUID(), type: "user.created", data: "{}", created_at: ago(0) },
    ]);
    // A row of a leased outbox (mail, logout tokens): finished at `finishedAt`, or still pending since long ago.
    const outboxRow = (status: string, finishedAt: string | null) => ({
      id: randomUUID(),
      status,
      attempts: 1,
      next_attempt_at: finishedAt ? null : ago(40 * DAY),
      lease_token: null,
      lease_expires_at: null,
      last_error: null,
      created_at: ago(40 * DAY),
      finished_at: finishedAt,
    });
    // Identity's mail outbox: finished 8 days ago (past the 7-day default), finished now, and pending since long ago.
    const mail = (status: string, finishedAt: string | null) => ({
      ...outboxRow(status, finishedAt),
      template: "test-message",
      locale: "en",
      application_id: null,
      recipient: "a@example.com",
      subject: "s",
      text_body: "t",
      html_body: "h",
    });
    await db("mail_outbox").insert([
      ...times(6, () => mail("sent", ago(8 * DAY))),
      ...times(6, () => mail("failed", ago(8 * DAY))),
      mail("sent", ago(0)),
      mail("pending", null),
    ]);
    // Back-channel logout tokens (X-ID-LOGOUT-10): finished 31 days ago (past the webhook history's 30), finished now, and pending.
    const logout = (status: string, finishedAt: string | null) => ({
      ...outboxRow(status, finishedAt),
      application_id: ids.app,
      user_id: ids.user,
      sid: "s".repeat(64),
    });
    await db("backchannel_logouts").insert([
      ...times(6, () => logout("sent", ago(31 * DAY))),
      ...times(6, () => logout("failed", ago(31 * DAY))),
      logout("sent", ago(0)),
      logout("pending", null),
    ]);
    // Email verification links (X-ID-EVF-2): 12 expired two days ago, used or not, and one still live.
    const link = (expiresAt: string, used: boolean) => ({
      token_hash: randomUUID().replaceAll("-", "").padEnd(64, "0"),
      user_id: ids.user,
      email: "a@example.com",
      purpose: "address",
      application_id: null,
      return_to: null,
      created_at: ago(3 * DAY),
      expires_at: expiresAt,
      consumed_at: used ? ago(3 * DAY) : null,
    });
    await db("email_verifications").insert([...times(12, (i) => link(ago(2 * DAY), i % 2 === 0)), link(ago(-DAY), false)]);
    // Device authorizations (X-ID-DEV-1): 12 expired two days ago, whatever they came to, and one live;
    // wrong user codes (X-ID-DEV-4): kept as long as the sign-in failures.
    const device = (expiresAt: string, status: string) => ({
      id: randomUUID(),
      device_code_hash: randomUUID(),
      user_code_hash: randomUUID(),
      application_id: ids.app,
      scopes: "[]",
      created_at: ago(3 * DAY),
      expires_at: expiresAt,
      interval_seconds: 5,
      last_polled_at: null,
      status,
      user_id: status === "pending" ? null : ids.user,
      auth_time: null,
      amr: null,
      decided_at: null,
    });
    await db("device_authorizations").insert([
      ...times(12, (i) => device(ago(2 * DAY), ["pending", "approved", "denied", "redeemed"][i % 4]!)),
      device(ago(-600), "pending"),
    ]);
    await db("device_code_guesses").insert([
      ...times(12, () => ({ subject: "address:203.0.113.0", at: ago(2 * DAY) })),
      { subject: "address:203.0.113.0", at: ago(HOUR) },
    ]);
    // Pushed authorization requests (X-ID-PAR-3): as short-lived as codes, used or not.
    const pushedRequest = (expiresAt: string, consumedAt: string | null) => ({
      request_uri_hash: randomUUID().replace(/-/g, "").padEnd(64, "0"),
      application_id: ids.app,
      parameters: "{}",
      created_at: ago(3 * DAY),
      expires_at: expiresAt,
      consumed_at: consumedAt,
    });
    await db("oauth_pushed_requests").insert([
      ...times(6, () => pushedRequest(ago(2 * DAY), null)),
      ...times(6, () => pushedRequest(ago(2 * DAY), ago(2 * DAY))),
      pushedRequest(ago(-60), null),
    ]);
  }, 120_000);
  afterAll(async () => t?.close());

  it("deletes exactly the rows past their default periods, in batches of at most the batch size", async () => {
    expect(Number((await t.db("webhook_attempt_counts").where({ endpoint_id: endpoint }).first("attempts"))!.attempts)).toBe(27);
    const batches: Array<{ rule: string; rows: number }> = [];
    const purger = createPurger(t.db, identityRetentionRules(identityRetentionOf(loadConfig({})).periods), {
      batchRows: BATCH,
      onBatch: (rule, rows) => batches.push({ rule, rows }),
    });
    const deleted = await purger.purge(new Date(NOW));
    expect(deleted).toEqual({
      codes: 25,
      "authorization requests": 0,
      "social states": 0,
      "refresh tokens": 25,
      grants: 12,
      "revoked access tokens": 12,
      sessions: 12,
      "sign-in failures": 12,
      "registration attempts": 12,
      "known sign-in addresses": 12,
      "webhook attempts": 25,
      "webhook deliveries": 12,
      "webhook events": 12,
      mail: 12,
      "audit events": 12,
      "password resets": 12,
      "email verifications": 12,
      "passkey challenges": 12,
      "client assertion ids": 12,
      "device authorizations": 12,
      "device code guesses": 12,
      "pushed authorization requests": 12,
      "dpop proofs": 12,
      "back-channel logouts": 12,
    });
    expect(Math.max(...batches.map((b) => b.rows))).toBeLessThanOrEqual(BATCH);
    expect(batches.filter((b) => b.rule === "codes").map((b) => b.rows)).toEqual([10, 10, 5]);

    expect(await count(t, "oauth_codes")).toBe(5);
    expect(await count(t, "oauth_refresh_tokens")).toBe(3);
    expect(await count(t, "oauth_grants")).toBe(2);
    expect(await count(t, "oauth_revoked_access_tokens")).toBe(1);
    expect(await count(t, "oauth_sessions")).toBe(1);
    expect(await count(t, "oauth_signin_failures")).toBe(1);
    expect(await count(t, "registration_attempts")).toBe(1);
    expect(await count(t, "oauth_signin_known_addresses")).toBe(1);
    expect(await count(t, "webhook_attempts")).toBe(2);
    expect(((await t.db("webhook_deliveries").orderBy("id").pluck("status")) as string[]).sort()).toEqual(["failed", "pending"]);
    expect(await count(t, "webhook_events")).toBe(1);
    expect(((await t.db("mail_outbox").pluck("status")) as string[]).sort()).toEqual(["pending", "sent"]);
    expect(await count(t, "audit_events")).toBe(1);
    expect(await count(t, "password_resets")).toBe(1);
    expect(await count(t, "email_verifications")).toBe(1);
    expect(await count(t, "passkey_challenges")).toBe(2);
    expect(await count(t, "client_assertion_jtis")).toBe(1);
    expect(await count(t, "device_authorizations")).toBe(1);
    expect(await count(t, "device_code_guesses")).toBe(1);
    expect(await count(t, "oauth_pushed_requests")).toBe(1);
    expect(await count(t, "oauth_dpop_proofs")).toBe(1);
    expect(((await t.db("backchannel_logouts").pluck("status")) as string[]).sort()).toEqual(["pending", "sent"]);
    // The history's exact total follows the purge (the counter's triggers fire on every delete).
    expect(Number((await t.db("webhook_attempt_counts").where({ endpoint_id: endpoint }).first("attempts"))!.attempts)).toBe(2);

    expect(Object.values(await purger.purge(new Date(NOW))).every((n) => n === 0)).toBe(true);
  });
});

describe("retention pacing", () => {
  const t = identityDbWithParents("sqlite");
  const expiredCodes = (n: number) => t.db("oauth_codes").insert(times(n, () => codeRow(t.ids, ago(2 * DAY))));
  const codes = identityRetentionRules(identityRetentionOf(loadConfig({})).periods).filter((r) => r.name === "codes");

  /** 25 expired codes purged in batches of 10, each batch taking `batchMs` on an injected clock: the waits between batches. */
  async function waitsFor(batchMs: number): Promise<number[]> {
    await expiredCodes(25);
    let clock = 0;
    const waits: number[] = [];
    const purger = createPurger(t.db, codes, {
      batchRows: 10,
      pauseMs: 10,
      // Each batch reads the clock before and after it: every read is batchMs after the last.
      now: () => (clock += batchMs),
      wait: async (ms) => void waits.push(ms),
    });
    expect((await purger.purge(new Date(NOW))).codes).toBe(25);
    return waits;
  }

  it("waits the least pause after quick batches, and twice a slow batch's time after a slow one (the lock held at most a third of the time)", async () => {
    expect(await waitsFor(1)).toEqual([10, 10]);
    expect(await waitsFor(40)).toEqual([80, 80]);
  });

  it("a stop asked for between batches ends the run after the batch in progress (a shutdown does not wait for a long purge)", async () => {
    await t.db("oauth_codes").delete();
    await expiredCodes(35);
    let batches = 0;
    const purger = createPurger(t.db, codes, { batchRows: 10, onBatch: () => void batches++ });
    expect(await purger.purge(new Date(NOW), () => batches >= 2)).toEqual({ codes: 20 });
    expect(await count(t, "oauth_codes")).toBe(15);
    expect(await purger.purge(new Date(NOW), () => true)).toEqual({});
    expect((await purger.purge(new Date(NOW))).codes).toBe(15);
  });

  it("a rule that fails does not keep the others from running; the run reports what it deleted and what failed", async () => {
    await expiredCodes(5);
    const broken = { ...codes[0]!, name: "broken", table: "no_such_table" };
    const purger = createPurger(t.db, [broken, ...codes], { batchRows: 10 });
    const failed = await purger.purge(new Date(NOW)).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(PurgeError);
    expect((failed as PurgeError).deleted).toEqual({ broken: 0, codes: 5 });
    expect((failed as PurgeError).errors).toHaveLength(1);
    expect(String((failed as PurgeError).errors[0])).toMatch(/no_such_table/);
  });
});

describe("retention configuration", () => {
  it("refuses a throttle period shorter than the windows that count those rows, names the variable", () => {
    expect(() => loadConfig({ IDENTITY_RETENTION_THROTTLE_SECONDS: "600" })).toThrow(
      /IDENTITY_RETENTION_THROTTLE_SECONDS: must be at least 3600/,
    );
    expect(() => loadConfig({ LOGIN_WINDOW_SECONDS: "7200", IDENTITY_RETENTION_THROTTLE_SECONDS: "3600" })).toThrow(/at least 7200/);
    expect(() => loadConfig({ IDENTITY_RETENTION_CODES_SECONDS: "-1" })).toThrow(/IDENTITY_RETENTION_CODES_SECONDS/);
    expect(loadConfig({ IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS: "0" }).IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS).toBe(0);
  });

  it("refuses an email message period shorter than the Idempotency-Key window (a purged message takes its key along), names the variable", () => {
    expect(() => loadConfig({ EMAIL_RETENTION_MESSAGES_SECONDS: "3600" })).toThrow(
      /EMAIL_RETENTION_MESSAGES_SECONDS: must be at least 86400/,
    );
    expect(loadConfig({ EMAIL_RETENTION_MESSAGES_SECONDS: "86400" }).EMAIL_RETENTION_MESSAGES_SECONDS).toBe(86400);
  });
});
