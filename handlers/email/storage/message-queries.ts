/**
 * Named queries over messages, their copies (one row per recipient, also the outbox of outbound
 * mail), the timeline, tracked links and attachments.
 */
import type { Knex } from "knex";
import { pageNewestFirst, insertChunked, isPostgres } from "../../../server/storage/db.ts";
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

export interface LinkRow {
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
  links: LinkRow[];
  timeline: TimelineRow[];
}

export function createMessageQueries(db: Knex) {
  const pg = isPostgres(db);
  return {
    async insertMessage(m: NewMessage, trx: Database): Promise<void> {
      await trx("emails").insert(m.email);
      await insertChunked(trx, "email_attachments", m.attachments);
      await insertChunked(trx, "email_recipients", m.recipients);
      await insertChunked(trx, "email_links", m.links);
      await insertChunked(trx, "email_events", m.timeline);
    },

    findIdempotencyKey: (key: string, trx: Database = db) =>
      trx("idempotency_keys").where({ key }).first() as Promise<
        { key: string; request_hash: string; email_id: string; created_at: string } | undefined
      >,
    /** Claims a key for a new message (in its transaction); an expired entry is replaced. */
    async putIdempotencyKey(
      row: { key: string; request_hash: string; email_id: string; created_at: string },
      expiredBefore: string,
      trx: Database,
    ): Promise<void> {
      await trx("idempotency_keys").where({ key: row.key }).andWhere("created_at", "<", expiredBefore).delete();
      await trx("idempotency_keys").insert(row);
    },

    findEmail: (id: string, trx: Database = db) => trx<EmailRow>("emails").where({ id }).first() as Promise<EmailRow | undefined>,
    /**
     * The message, read in `trx` before anything locks one of its copies (undefined: gone, purged).
     * PostgreSQL: FOR KEY SHARE, so the retention purge (FOR UPDATE SKIP LOCKED, then a cascade to
     * the copies) skips it, or this waits for the purge before holding any copy. Locking the copy
     * first and then the message (an UPDATE, or the foreign key of a timeline row) is the opposite
     * order to the purge's, and PostgreSQL aborts one of the two with 40P01. KEY SHARE does not
     * conflict with touchEmail's FOR NO KEY UPDATE. SQLite serialises writers anyway.
     */
    lockEmail: (id: string, trx: Database) => {
      const q = trx<EmailRow>("emails").where({ id });
      return (pg ? q.forKeyShare() : q).first() as Promise<EmailRow | undefined>;
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
      db<AttachmentRow>("email_attachments").where({ email_id: emailId }).orderBy("position") as Promise<AttachmentRow[]>,

    linksOf: (recipientId: string) =>
      db<LinkRow>("email_links").where({ recipient_id: recipientId }).orderBy("position") as Promise<LinkRow[]>,

    findRecipient: (id: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ id }).first() as Promise<RecipientRow | undefined>,
    recipientByReturnToken: (token: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ return_token: token }).first() as Promise<RecipientRow | undefined>,
    recipientByMessageId: (messageId: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ message_id: messageId }).first() as Promise<RecipientRow | undefined>,
    recipientByOpenToken: (token: string, trx: Database = db) =>
      trx<RecipientRow>("email_recipients").where({ open_token: token }).first() as Promise<RecipientRow | undefined>,
    linkByToken: (token: string, trx: Database = db) =>
      trx<LinkRow>("email_links").where({ token }).first() as Promise<LinkRow | undefined>,
    /** Marks a link clicked once; true for the first click only (safe under concurrency). */
    firstClick: async (token: string, at: string, trx: Database): Promise<boolean> =>
      (await trx("email_links").where({ token }).whereNull("clicked_at").update({ clicked_at: at })) > 0,
    /** Marks a copy opened once; true for the first open only. */
    firstOpen: async (recipientId: string, at: string, trx: Database): Promise<boolean> =>
      (await trx("email_recipients").where({ id: recipientId }).whereNull("opened_at").update({ opened_at: at })) > 0,

    /** Newest first, optionally one overall status and/or one tag. */
    async listEmails(filter: { status?: string | undefined; tag?: string | undefined }, page: number, pageSize: number) {
      const q = db<EmailRow>("emails");
      if (filter.status) q.where("status", filter.status);
      // Tags are [A-Za-z0-9_-]: only `_` needs escaping in LIKE.
      if (filter.tag) q.whereRaw("tags like ? escape '\\'", [`%"${filter.tag.replace(/_/g, "\\_")}"%`]);
      return pageNewestFirst<EmailRow>(q, page, pageSize);
    },

    insertTimeline: (rows: TimelineRow[], trx: Database) => insertChunked(trx, "email_events", rows),

    updateRecipient: (id: string, patch: Partial<RecipientRow>, trx: Database) => trx("email_recipients").where({ id }).update(patch),

    /** Sets a copy's fields only if it still holds this lease (a copy whose lease expired belongs to someone else now). */
    updateLeased: async (id: string, leaseToken: string, patch: Partial<RecipientRow>, trx: Database): Promise<boolean> =>
      (await trx("email_recipients").where({ id, lease_token: leaseToken }).update(patch)) > 0,

    /** After a copy changed: the message's derived status and `updated_at`. */
    async touchEmail(id: string, at: string, trx: Database): Promise<void> {
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
