/**
 * The identity database at a scale of N, seeded in bulk through SQL (one INSERT … SELECT over a
 * recursive CTE per table) into the tables the service's migrations made: N users, each an admin of
 * the one organization; N codes, one in ten expired long ago (the retention purge's work); one
 * webhook holding N attempts (the worst case for its history); N grants, each with one live refresh
 * token; N deliveries of that webhook, one in ten pending and due (the dispatcher's claim).
 */
import type { Database } from "../../server/storage/db.ts";
import type { SecretKeys } from "../../server/security/tokens.ts";
import { APP, ORG, rowIdSql, secretKeySql, T0, userIdSql, WEBHOOK } from "./keys.ts";
import { boolSql, isoSql, seq } from "./sql.ts";

/** When every seeded identity row was made. */
const AT = "2026-01-01T00:00:00.000Z";

/** The organization ORG and its confidential application APP. */
export async function seedOrganizationAndApplication(db: Database): Promise<void> {
  await db("organizations").insert({ id: ORG, name: "Org", created_at: AT });
  await db("applications").insert({
    id: APP,
    organization_id: ORG,
    name: "App",
    client_id: "bench-app",
    client_type: "confidential",
    redirect_uris: "[]",
    allowed_scopes: "[]",
    enabled_providers: "[]",
    branding: "{}",
    created_at: AT,
    updated_at: AT,
  });
}

/** N users, `user<i>@example.com`, keyed userId(i). */
export async function seedUsers(db: Database, n: number, pg: boolean): Promise<void> {
  await db.raw(`${seq(n)} INSERT INTO users (id, email, first_name, last_name, email_verified, created_at, updated_at)
    SELECT ${userIdSql(pg)}, 'user' || i || '@example.com', 'F', 'L', ${boolSql(pg, false)}, '${AT}', '${AT}' FROM s`);
}

/**
 * N codes of APP spread over the N users, one in ten expired long ago, the rest live; the i-th
 * keyed by `keySql` (a SQL expression of i).
 */
export async function seedCodes(db: Database, n: number, pg: boolean, keySql: string): Promise<void> {
  await db.raw(`${seq(n)} INSERT INTO oauth_codes (code_hash, grant_id, application_id, user_id, redirect_uri, scopes, auth_time, created_at, expires_at)
    SELECT ${keySql}, '${ORG}', '${APP}', ${userIdSql(pg, `(((${pg ? "i::bigint" : "i"} - 1) * 7919) % ${n} + 1)`)},
           'https://a.example/cb', '[]', '${AT}', '${AT}', CASE WHEN i % 10 = 0 THEN '2020-01-01T00:00:00.000Z' ELSE '2099-01-01T00:00:00.000Z' END FROM s`);
}

/** Everything bench:scale measures on identity, at N rows per table; codes and refresh tokens keyed as `keys` says. */
export async function seedIdentity(db: Database, n: number, pg: boolean, keys: SecretKeys): Promise<void> {
  await seedOrganizationAndApplication(db);
  await seedUsers(db, n, pg);
  // Every user an admin (of its own row's organization: one organization, N admins).
  await db.raw(
    `${seq(n)} INSERT INTO organization_admins (organization_id, user_id, created_at) SELECT '${ORG}', ${userIdSql(pg)}, '${AT}' FROM s`,
  );
  // Keyed as the service keys them under IDENTITY_TOKEN_KEYS (secretStorageKey).
  await seedCodes(db, n, pg, secretKeySql(pg, keys, 0));
  // One webhook holding all N attempts (the worst case for its history), distinct times.
  await db("webhooks").insert({
    id: WEBHOOK,
    organization_id: ORG,
    application_id: APP,
    url: "https://hooks.example/in",
    events: '["user.created"]',
    is_active: true,
    max_retries: 3,
    retry_delay_seconds: 60,
    secret: "x",
    created_at: AT,
    updated_at: AT,
  });
  await db.raw(`${seq(n)} INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt_number, ${pg ? '"trigger"' : "trigger"}, status_code, success, duration_ms, attempted_at)
    SELECT ${pg ? "lpad(to_hex(i), 8, '0') || '-0000-7000-8000-000000000000'" : "printf('%08x-0000-7000-8000-000000000000', i)"}, ${pg ? "md5(i::text)::uuid::text" : "printf('%08x-0000-4000-8000-%012x', i, i)"}, '${WEBHOOK}',
           ${pg ? "md5(i::text)::uuid::text" : "printf('%08x-0000-4000-8000-%012x', i, i)"}, 'user.created', 1, 'event', 204, ${boolSql(pg, true)}, 12, ${isoSql(pg, `${T0} + i * 1000`)} FROM s`);
  // N grants, each with one live refresh token (the token exchange's and rotation's tables).
  await db.raw(`${seq(n)} INSERT INTO oauth_grants (id, application_id, user_id, scopes, auth_time, created_at, revoked_at, ends_at)
    SELECT ${rowIdSql(pg, "9000")}, '${APP}', ${userIdSql(pg)}, '[]', '${AT}', '${AT}', NULL, '2099-01-01T00:00:00.000Z' FROM s`);
  await db.raw(`${seq(n)} INSERT INTO oauth_refresh_tokens (id, token_hash, grant_id, parent_id, created_at, expires_at)
    SELECT ${rowIdSql(pg, "a000")}, ${secretKeySql(pg, keys, 1)}, ${rowIdSql(pg, "9000")}, NULL, '${AT}', '2099-01-01T00:00:00.000Z' FROM s`);
  // N deliveries of the webhook, one in ten still pending and due (the dispatcher's claim).
  await db.raw(`${seq(n)} INSERT INTO webhook_deliveries (id, event_id, endpoint_id, event_type, body, status, attempts_made, next_attempt_at, next_trigger, auto_retry, send_when_inactive, created_at, updated_at)
    SELECT ${rowIdSql(pg, "b000")}, ${rowIdSql(pg, "b000")}, '${WEBHOOK}', 'user.created', '{}', CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'succeeded' END,
           CASE WHEN i % 10 = 0 THEN 0 ELSE 1 END, CASE WHEN i % 10 = 0 THEN ${isoSql(pg, `${T0} + i * 1000`)} ELSE NULL END, 'event',
           ${boolSql(pg, true)}, ${boolSql(pg, false)}, ${isoSql(pg, `${T0} + i * 1000`)}, ${isoSql(pg, `${T0} + i * 1000`)} FROM s`);
  await db.raw("ANALYZE");
}

/** The cursor of the webhook's last history page: the key of the row just before the 20 oldest. */
export async function lastHistoryPageCursor(db: Database) {
  const edge = (await db("webhook_attempts")
    .where({ endpoint_id: WEBHOOK })
    .orderBy([{ column: "attempted_at" }, { column: "attempt_number" }, { column: "id" }])
    .offset(20)
    .first()) as {
    attempted_at: string;
    attempt_number: number;
    id: string;
  };
  return { attemptedAt: edge.attempted_at, attemptNumber: Number(edge.attempt_number), id: edge.id };
}
