/**
 * Named queries over messages, their copies (one row per recipient, also the outbox of outbound
 * mail), the timeline, tracked links (once per message; the first click of each copy and link) and
 * attachments.
 *
 * The queries a message runs on its way (acceptance, the claim, the copy's composition, the
 * outcome) have two paths in one function each: on SQLite, statements prepared once per connection
 * (server/storage/sqlite/statements.ts), run on the connection of the transaction they are given (or
 * the pool's); through knex on PostgreSQL. Through knex each SQLite statement cost a query build and
 * a fresh `prepare`, several times the statement itself (bench/README.md, email). Everything cold
 * stays knex on both.
 */
import type { Knex } from "knex";
import { pageNewestFirst, insertChunked } from "../../../server/storage/db.ts";
import { isPostgres, isSqlite } from "../../../server/storage/dialect.ts";
import { groupCommit } from "../../../server/storage/sqlite/group-commit.ts";
import { preparedStatements, statementFor, type Statements } from "../../../server/storage/sqlite/statements.ts";
import { messageStatus, type EmailStatus } from "../domain/status.ts";

type Database = Knex | Knex.Transaction;

export interface EmailRow {
  id: string;
  api_key_id: string;
  from_address: string;
  from_name: string | null;
  subject: string;
  text: string | null;
  html: string | null;
  reply_to: string; // JSON
  headers: string; // JSON
  tags: string; // JSON
  metadata: string; // JSON
  track_opens: boolean | number;
  track_clicks: boolean | number;
  test_mode: boolean | number;
  status: EmailStatus;
  created_at: string;
  updated_at: string;
}

export type Transport = "simulator" | "smtp" | "sink";

export interface RecipientRow {
  id: string;
  email_id: string;
  position: number;
  address: string;
  address_key: string;
  status: EmailStatus;
  transport: Transport;
  message_id: string;
  return_token: string;
  open_token: string;
  bounce_type: "hard" | "soft" | null;
  error_message: string | null;
  smtp_response: string | null;
  smtp_status: string | null;
  attempts: number;
  next_attempt_at: string | null;
  lease_token: string | null;
  lease_expires_at: string | null;
  opened_at: string | null;
  clicked_at: string | null;
  updated_at: string;
}

export interface AttachmentRow {
  email_id: string;
  position: number;
  size: number;
  filename: string;
  content_type: string;
  content_id: string | null;
  content: string;
}

/** A tracked destination of a message (X-EM-28): number `position` in document order. */
export interface MessageLinkRow {
  email_id: string;
  position: number;
  url: string;
}

/** A click link of the earlier format: a random token stored per copy and link (read only, until purged). */
export interface LegacyLinkRow {
  token: string;
  recipient_id: string;
  position: number;
  url: string;
  clicked_at?: string | null;
}

export interface TimelineRow {
  id: string;
  email_id: string;
  recipient_id: string;
  type: string;
  data: string; // JSON
  created_at: string;
}

/** Rows of one new message, written together. */
export interface NewMessage {
  email: EmailRow;
  attachments: AttachmentRow[];
  recipients: RecipientRow[];
  /** The message's tracked destinations, once for all its copies. */
  links: MessageLinkRow[];
  timeline: TimelineRow[];
}

/** An Idempotency-Key as stored: one API key's use of one value (X-EM-4), naming the message it created. */
export interface IdempotencyRow {
  api_key_id: string;
  key: string;
  request_hash: string;
  email_id: string;
  created_at: string;
}

/** A new message's claim on an Idempotency-Key (its API key's entry created before `expiredBefore` is replaced). */
export interface IdempotencyClaim {
  row: IdempotencyRow;
  expiredBefore: string;
}

const EMAIL_COLUMNS = [
  "id",
  "api_key_id",
  "from_address",
  "from_name",
  "subject",
  "text",
  "html",
  "reply_to",
  "headers",
  "tags",
  "metadata",
  "track_opens",
  "track_clicks",
  "test_mode",
  "status",
  "created_at",
  "updated_at",
] as const satisfies ReadonlyArray<keyof EmailRow>;
const RECIPIENT_COLUMNS = [
  "id",
  "email_id",
  "position",
  "address",
  "address_key",
  "status",
  "transport",
  "message_id",
  "return_token",
  "open_token",
  "bounce_type",
  "error_message",
  "smtp_response",
  "smtp_status",
  "attempts",
  "next_attempt_at",
  "lease_token",
  "lease_expires_at",
  "opened_at",
  "clicked_at",
  "updated_at",
] as const satisfies ReadonlyArray<keyof RecipientRow>;
const ATTACHMENT_COLUMNS = [
  "email_id",
  "position",
  "size",
  "filename",
  "content_type",
  "content_id",
  "content",
] as const satisfies ReadonlyArray<keyof AttachmentRow>;
const LINK_COLUMNS = ["email_id", "position", "url"] as const satisfies ReadonlyArray<keyof MessageLinkRow>;
const TIMELINE_COLUMNS = ["id", "email_id", "recipient_id", "type", "data", "created_at"] as const satisfies ReadonlyArray<
  keyof TimelineRow
>;

/** What lockEmail reads of a message: what an outcome or a tracked event needs of it (its mode: whose webhooks and suppression list, X-EM-27). */
const LOCKED_EMAIL_COLUMNS = ["id", "metadata", "track_opens", "track_clicks", "test_mode"] as const satisfies ReadonlyArray<
  keyof EmailRow
>;
export type LockedEmail = Pick<EmailRow, (typeof LOCKED_EMAIL_COLUMNS)[number]>;

const insert = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`;

/**
 * The hot statements on SQLite. Each reads one table, but the `= +?` rule of server/storage/sqlite/statements.ts
 * holds for them too where the planner weighs a bound value: a `column = ?` with an ORDER BY (the
 * attachments' and links' reads), and a bound LIMIT (the claim's). Written plainly, each run of them
 * parsed and planned its SQL again (test/sqlite-statement-reuse.test.ts).
 */
export const SQLITE_STATEMENTS = {
  insertEmail: insert("emails", EMAIL_COLUMNS),
  insertAttachment: insert("email_attachments", ATTACHMENT_COLUMNS),
  insertRecipient: insert("email_recipients", RECIPIENT_COLUMNS),
  insertLink: insert("message_links", LINK_COLUMNS),
  insertTimeline: insert("email_events", TIMELINE_COLUMNS),
  deleteExpiredKey: "DELETE FROM idempotency_keys WHERE api_key_id = ? AND key = ? AND created_at < ?",
  insertKey: insert("idempotency_keys", ["api_key_id", "key", "request_hash", "email_id", "created_at"]),
  findEmail: "SELECT * FROM emails WHERE id = ?",
  lockEmail: `SELECT ${LOCKED_EMAIL_COLUMNS.join(", ")} FROM emails WHERE id = ?`,
  findRecipient: "SELECT * FROM email_recipients WHERE id = ?",
  attachmentsOf: "SELECT * FROM email_attachments WHERE email_id = +? ORDER BY position",
  messageLinksOf: "SELECT * FROM message_links WHERE email_id = +? ORDER BY position",
  legacyLinksOf: "SELECT * FROM email_links WHERE recipient_id = +? ORDER BY position",
  statusesOf: "SELECT status FROM email_recipients WHERE email_id = ?",
  setEmailStatus: "UPDATE emails SET updated_at = ?, status = ? WHERE id = ?",
  claimDue: `UPDATE email_recipients SET lease_token = ?, lease_expires_at = ?, status = 'Sent', updated_at = ?
    WHERE id IN (SELECT id FROM email_recipients WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?
                 AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY next_attempt_at LIMIT +?)
    RETURNING *`,
} as const;
const SQL = SQLITE_STATEMENTS;

/** better-sqlite3 binds numbers, not booleans. */
const bit = (v: boolean | number) => (v ? 1 : 0);

/** A patch as `UPDATE email_recipients SET a = @a, … WHERE id = @id [AND lease_token = @lease]` (its columns come from code). */
function updateSql(patch: Partial<RecipientRow>, leased: boolean): string {
  const columns = Object.keys(patch).filter((c) => patch[c as keyof RecipientRow] !== undefined);
  return `UPDATE email_recipients SET ${columns.map((c) => `${c} = @${c}`).join(", ")} WHERE id = @__id${leased ? " AND lease_token = @__lease" : ""}`;
}

function writeMessage(s: Statements<keyof typeof SQL>, m: NewMessage, idempotency: IdempotencyClaim | undefined): void {
  s.insertEmail.run({
    ...m.email,
    track_opens: bit(m.email.track_opens),
    track_clicks: bit(m.email.track_clicks),
    test_mode: bit(m.email.test_mode),
  });
  for (const a of m.attachments) s.insertAttachment.run(a);
  for (const r of m.recipients) s.insertRecipient.run(r);
  for (const l of m.links) s.insertLink.run(l);
  for (const t of m.timeline) s.insertTimeline.run(t);
  if (idempotency) {
    s.deleteExpiredKey.run(idempotency.row.api_key_id, idempotency.row.key, idempotency.expiredBefore);
    s.insertKey.run(idempotency.row);
  }
}

export function createMessageQueries(db: Knex) {
  const pg = isPostgres(db);
  const sqlite = isSqlite(db);
  const on = preparedStatements(SQL);
  // SQLite: the new messages that arrive together share one COMMIT (one fsync), each in a savepoint of its own.
  const commitTogether = groupCommit<keyof typeof SQL>((fn) => on(db, fn));
  return {
    /**
     * Stores a new message (the message, its attachments, copies, links and timeline) and its
     * Idempotency-Key if any, in one transaction; resolves once it is committed. A key taken by a
     * concurrent request rejects with the unique index's error, and nothing of the message is kept.
     */
    async storeMessage(m: NewMessage, idempotency?: IdempotencyClaim): Promise<void> {
      if (sqlite) {
        await commitTogether((s) => {
          writeMessage(s, m, idempotency);
          return true;
        });
        return;
      }
      await db.transaction(async (trx) => {
        await trx("emails").insert(m.email);
        await insertChunked(trx, "email_attachments", m.attachments);
        await insertChunked(trx, "email_recipients", m.recipients);
        await insertChunked(trx, "message_links", m.links);
        await insertChunked(trx, "email_events", m.timeline);
        if (idempotency) {
          await trx("idempotency_keys")
            .where({ api_key_id: idempotency.row.api_key_id, key: idempotency.row.key })
            .andWhere("created_at", "<", idempotency.expiredBefore)
            .delete();
          await trx("idempotency_keys").insert(idempotency.row);
        }
      });
    },

    /** This API key's entry for an Idempotency-Key value (X-EM-4: another API key's is another entry). */
    findIdempotencyKey: (apiKeyId: string, key: string, trx: Database = db) =>
      trx<IdempotencyRow>("idempotency_keys").where({ api_key_id: apiKeyId, key }).first() as Promise<IdempotencyRow | undefined>,
    findEmail: (id: string, trx: Database = db) =>
      sqlite
        ? on(trx, (s) => s.findEmail.get(id) as EmailRow | undefined)
        : (trx<EmailRow>("emails").where({ id }).first() as Promise<EmailRow | undefined>),
    /**
     * The message, read in `trx` before anything locks one of its copies (undefined: gone, purged).
     * PostgreSQL: FOR KEY SHARE, so the retention purge (FOR UPDATE SKIP LOCKED, then a cascade to
     * the copies) skips it, or this waits for the purge before holding any copy. Locking the copy
     * first and then the message (an UPDATE, or the foreign key of a timeline row) is the opposite
     * order to the purge's, and PostgreSQL aborts one of the two with 40P01. KEY SHARE does not
     * conflict with touchEmail's FOR NO KEY UPDATE. SQLite serialises writers anyway. Only the
     * columns an outcome or a tracked event needs (not the bodies).
     */
    lockEmail: (id: string, trx: Database): Promise<LockedEmail | undefined> => {
      if (sqlite) return on(trx, (s) => s.lockEmail.get(id) as LockedEmail | undefined);
      const q = trx<EmailRow>("emails").where({ id }).select(LOCKED_EMAIL_COLUMNS);
      return (pg ? q.forKeyShare() : q).first() as Promise<LockedEmail | undefined>;
    },

    recipientsOf: (emailId: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ email_id: emailId }).orderBy("position") as Promise<RecipientRow[]>,

    /** Copies of many messages at once (list pages). */
    recipientsOfMany: (emailIds: string[]) =>
      emailIds.length
        ? (db<RecipientRow>("email_recipients")
            .whereIn("email_id", emailIds)
            .orderBy([{ column: "email_id" }, { column: "position" }]) as Promise<RecipientRow[]>)
        : Promise.resolve([]),

    timelineOf: (emailId: string) =>
      db<TimelineRow>("email_events")
        .where({ email_id: emailId })
        .orderBy([{ column: "created_at" }, { column: "id" }]) as Promise<TimelineRow[]>,

    attachmentsOf: (emailId: string) =>
      sqlite
        ? on(db, (s) => s.attachmentsOf.all(emailId) as unknown as AttachmentRow[])
        : (db<AttachmentRow>("email_attachments").where({ email_id: emailId }).orderBy("position") as Promise<AttachmentRow[]>),

    /** The message's tracked destinations, in order (X-EM-28). */
    messageLinksOf: (emailId: string) =>
      sqlite
        ? on(db, (s) => s.messageLinksOf.all(emailId) as unknown as MessageLinkRow[])
        : (db<MessageLinkRow>("message_links").where({ email_id: emailId }).orderBy("position") as Promise<MessageLinkRow[]>),
    /** The destination numbered `position` of a message, for a click. */
    messageLink: async (emailId: string, position: number, trx: Database): Promise<string | undefined> =>
      ((await trx("message_links").where({ email_id: emailId, position }).first("url")) as { url: string } | undefined)?.url,
    /** Marks link `position` of a copy clicked; true for its first click only (safe under concurrency: the key decides). */
    firstLinkClick: async (recipientId: string, position: number, at: string, trx: Database): Promise<boolean> =>
      (
        (await trx("link_clicks")
          .insert({ recipient_id: recipientId, position, clicked_at: at })
          .onConflict(["recipient_id", "position"])
          .ignore()
          .returning("position")) as unknown[]
      ).length > 0,

    /** A copy's click links of the earlier format, in order (messages accepted before migration 0009). */
    legacyLinksOf: (recipientId: string) =>
      sqlite
        ? on(db, (s) => s.legacyLinksOf.all(recipientId) as unknown as LegacyLinkRow[])
        : (db<LegacyLinkRow>("email_links").where({ recipient_id: recipientId }).orderBy("position") as Promise<LegacyLinkRow[]>),

    findRecipient: (id: string, trx: Database = db) =>
      sqlite
        ? on(trx, (s) => s.findRecipient.get(id) as RecipientRow | undefined)
        : (trx<RecipientRow>("email_recipients").where({ id }).first() as Promise<RecipientRow | undefined>),
    recipientByReturnToken: (token: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ return_token: token }).first() as Promise<RecipientRow | undefined>,
    recipientByMessageId: (messageId: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ message_id: messageId }).first() as Promise<RecipientRow | undefined>,
    recipientByOpenToken: (token: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ open_token: token }).first() as Promise<RecipientRow | undefined>,
    /** A click link of the earlier format by its stored token. */
    legacyLinkByToken: (token: string, trx: Database = db) =>
      trx<LegacyLinkRow>("email_links").where({ token }).first() as Promise<LegacyLinkRow | undefined>,
    /** Marks a link of the earlier format clicked once; true for the first click only (safe under concurrency). */
    legacyFirstClick: async (token: string, at: string, trx: Database): Promise<boolean> =>
      (await trx("email_links").where({ token }).whereNull("clicked_at").update({ clicked_at: at })) > 0,
    /** Marks a copy opened once; true for the first open only. */
    firstOpen: async (recipientId: string, at: string, trx: Database): Promise<boolean> =>
      (await trx("email_recipients").where({ id: recipientId }).whereNull("opened_at").update({ opened_at: at })) > 0,

    /** One mode's messages (X-EM-27), newest first, optionally one overall status and/or one tag (indexes emails_by_mode, emails_by_mode_status). */
    async listEmails(filter: { testMode: boolean; status?: string | undefined; tag?: string | undefined }, page: number, pageSize: number) {
      const q = db<EmailRow>("emails").where("test_mode", filter.testMode);
      if (filter.status) q.where("status", filter.status);
      // Tags are [A-Za-z0-9_-]: only `_` needs escaping in LIKE.
      if (filter.tag) q.whereRaw("tags like ? escape '\\'", [`%"${filter.tag.replace(/_/g, "\\_")}"%`]);
      return pageNewestFirst<EmailRow>(q, page, pageSize);
    },

    insertTimeline: (rows: TimelineRow[], trx: Database): Promise<void> =>
      sqlite
        ? on(trx, (s) => {
            for (const row of rows) s.insertTimeline.run(row);
          })
        : insertChunked(trx, "email_events", rows),

    updateRecipient: async (id: string, patch: Partial<RecipientRow>, trx: Database): Promise<void> => {
      if (sqlite) await on(trx, (_s, conn) => statementFor(conn, updateSql(patch, false)).run({ ...patch, __id: id }));
      else await trx("email_recipients").where({ id }).update(patch);
    },

    /** Sets a copy's fields only if it still holds this lease (a copy whose lease expired belongs to someone else now). */
    updateLeased: async (id: string, leaseToken: string, patch: Partial<RecipientRow>, trx: Database): Promise<boolean> =>
      sqlite
        ? on(trx, (_s, conn) => statementFor(conn, updateSql(patch, true)).run({ ...patch, __id: id, __lease: leaseToken }).changes > 0)
        : (await trx("email_recipients").where({ id, lease_token: leaseToken }).update(patch)) > 0,

    /** After a copy changed: the message's derived status and `updated_at`. */
    async touchEmail(id: string, at: string, trx: Database): Promise<void> {
      if (sqlite) {
        await on(trx, (s) => {
          const statuses = (s.statusesOf.all(id) as Array<{ status: EmailStatus }>).map((r) => r.status);
          s.setEmailStatus.run(at, messageStatus(statuses), id);
        });
        return;
      }
      // PostgreSQL: lock the message first, so its copies are read after any concurrent change to
      // another copy committed (READ COMMITTED); else both writers see the other copy's old status
      // and the last to commit stores a stale message status. FOR NO KEY UPDATE, the lock the
      // UPDATE below takes anyway: FOR UPDATE would also wait for the KEY SHARE locks that
      // inserting timeline rows takes (the foreign key), and two writers upgrading deadlock.
      // SQLite serialises writers anyway.
      if (pg) await trx("emails").where({ id }).select("id").forNoKeyUpdate();
      const statuses = ((await trx("email_recipients").where({ email_id: id }).select("status")) as Array<{ status: EmailStatus }>).map(
        (r) => r.status,
      );
      await trx("emails")
        .where({ id })
        .update({ updated_at: at, status: messageStatus(statuses) });
    },

    /**
     * Claims up to `limit` due copies under a lease: pending (`Queued`, or `Sent` whose holder died),
     * due, and not leased by a live holder. PostgreSQL: SKIP LOCKED, so instances never claim the
     * same copy; SQLite: one connection serialises the transaction.
     */
    async claimDue(now: string, leaseToken: string, leaseExpiresAt: string, limit: number): Promise<RecipientRow[]> {
      if (sqlite) return on(db, (s) => s.claimDue.all(leaseToken, leaseExpiresAt, now, now, now, limit) as unknown as RecipientRow[]);
      // One statement (no BEGIN/COMMIT round trips): lease the due copies and return them. On
      // PostgreSQL, SKIP LOCKED lets several instances claim side by side without waiting.
      const due = db<RecipientRow>("email_recipients")
        .select("id")
        .whereNotNull("next_attempt_at")
        .andWhere("next_attempt_at", "<=", now)
        .andWhere((w) => w.whereNull("lease_expires_at").orWhere("lease_expires_at", "<", now))
        .orderBy("next_attempt_at")
        .limit(limit);
      if (pg) due.forUpdate().skipLocked();
      return (await db("email_recipients")
        .whereIn("id", due)
        .update({ lease_token: leaseToken, lease_expires_at: leaseExpiresAt, status: "Sent", updated_at: now })
        .returning("*")) as RecipientRow[];
    },

    /**
     * The outbound queue as its metrics see it: copies with an attempt to come (queued, deferred
     * or in flight) and the earliest due time among them, over the `next_attempt_at` index.
     */
    async pendingCopies(): Promise<{ depth: number; earliestDueAt: string | null }> {
      const row = (await db("email_recipients")
        .whereNotNull("next_attempt_at")
        .count({ depth: "*" })
        .min({ earliest: "next_attempt_at" })
        .first()) as { depth: number | string; earliest: string | null } | undefined;
      return { depth: Number(row?.depth ?? 0), earliestDueAt: row?.earliest ?? null };
    },

    /** After an open or a click: the record changed, its status did not. */
    touchUpdatedAt: (emailId: string, at: string, trx: Database) => trx("emails").where({ id: emailId }).update({ updated_at: at }),
    /** The copy's first click, kept once. */
    markClicked: (recipientId: string, at: string, trx: Database) =>
      trx("email_recipients").where({ id: recipientId }).whereNull("clicked_at").update({ clicked_at: at }),
  };
}

export type MessageQueries = ReturnType<typeof createMessageQueries>;
