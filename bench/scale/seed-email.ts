/**
 * The email database at a scale of N, seeded in bulk through SQL into the tables the service's
 * migrations made: N messages sent one second apart from T0, each with one copy and one timeline
 * event; and one webhook endpoint holding N deliveries, each with its one attempt.
 */
import type { Database } from "../../server/storage/db.ts";
import { API_KEY, EMAIL_ENDPOINT, rowIdSql, T0 } from "./keys.ts";
import { boolSql, isoSql, seq } from "./sql.ts";

/** N messages (message i sent at T0 + i s, id emailId(i)), each with one copy and one timeline event. */
export async function seedMessages(db: Database, n: number, pg: boolean): Promise<void> {
  const f = boolSql(pg, false);
  const t = isoSql(pg, `${T0} + i * 1000`);
  await db.raw(`${seq(n)} INSERT INTO emails (id, api_key_id, from_address, from_name, subject, text, html, reply_to, headers, tags, metadata, track_opens, track_clicks, test_mode, status, created_at, updated_at)
    SELECT ${rowIdSql(pg, "c000")}, '${API_KEY}', 'from@example.com', NULL, 'Subject', 'Hello', NULL, '[]', '{}', '[]', '{}', ${f}, ${f}, ${f}, 'Delivered', ${t}, ${t} FROM s`);
  await db.raw(`${seq(n)} INSERT INTO email_recipients (id, email_id, position, address, address_key, status, transport, message_id, return_token, open_token, attempts, updated_at)
    SELECT ${rowIdSql(pg, "d000")}, ${rowIdSql(pg, "c000")}, 0, 'r' || i || '@example.com', 'r' || i || '@example.com', 'Delivered', 'smtp', '<' || i || '@bench.example>', 'rt' || i, 'ot' || i, 1, ${t} FROM s`);
  await db.raw(`${seq(n)} INSERT INTO email_events (id, email_id, recipient_id, type, data, created_at)
    SELECT ${rowIdSql(pg, "e000")}, ${rowIdSql(pg, "c000")}, ${rowIdSql(pg, "d000")}, 'email.delivered', '{}', ${t} FROM s`);
}

/** Everything bench:scale measures on email, at N rows per table. */
export async function seedEmail(db: Database, n: number, pg: boolean): Promise<void> {
  await seedMessages(db, n, pg);
  const f = boolSql(pg, false);
  const t = isoSql(pg, `${T0} + i * 1000`);
  await db.raw(`${seq(n)} INSERT INTO webhook_deliveries (id, event_id, endpoint_id, event_type, body, status, attempts_made, next_attempt_at, next_trigger, auto_retry, send_when_inactive, created_at, updated_at)
    SELECT ${rowIdSql(pg, "f000")}, ${rowIdSql(pg, "f000")}, '${EMAIL_ENDPOINT}', 'email.delivered', '{}', 'succeeded', 1, NULL, 'event', ${boolSql(pg, true)}, ${f}, ${t}, ${t} FROM s`);
  // Each delivery's one attempt: the history page reads the listed deliveries' attempts by delivery.
  await db.raw(`${seq(n)} INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt_number, ${pg ? '"trigger"' : "trigger"}, status_code, success, duration_ms, attempted_at)
    SELECT ${rowIdSql(pg, "f100")}, ${rowIdSql(pg, "f000")}, '${EMAIL_ENDPOINT}', ${rowIdSql(pg, "f000")}, 'email.delivered', 1, 'event', 204, ${boolSql(pg, true)}, 12, ${t} FROM s`);
  await db.raw("ANALYZE");
}
