/**
 * The message store: a message (`emails`) and what belongs to it and goes with it when it is
 * deleted: its copies, one per recipient (`email_recipients`, also the outbox of outbound mail), its
 * attachments, its timeline (`email_events`), its tracked links (`message_links`; the first click of
 * each copy and link, `link_clicks`; click links of the earlier format, `email_links`) and the
 * Idempotency-Key that created it. The interface and its portable knex implementation;
 * sqlite/messages.ts replaces what a message runs on its way (acceptance, the claim, the copy's
 * composition, the outcome) with prepared statements, postgres/messages.ts adds the claim, and
 * storage/index.ts picks one once.
 *
 * Lock order on PostgreSQL: the retention purge locks a message (FOR UPDATE SKIP LOCKED) and then,
 * through its cascade, the copies; every writer that changes a copy of a message reads the message
 * first with `lockEmail`, so the two never wait for each other in opposite orders (40P01). SQLite
 * has one writer at a time, and knex leaves the row locks out of its SQL there.
 */
import type { Knex } from "knex";
import { insertChunked, pageNewestFirst } from "../../../server/storage/db.ts";
import { defineTable } from "../../../server/storage/schema.ts";
import type { Tx } from "../../../server/storage/transaction.ts";
import {
  attachments,
  type AttachmentRow,
  type EmailRow,
  type EmailStatus,
  emails,
  idempotencyKeys,
  type IdempotencyRow,
  legacyLinks,
  type LegacyLinkRow,
  linkClicks,
  messageLinks,
  type MessageLinkRow,
  type RecipientRow,
  recipients,
  timeline,
  type TimelineRow,
} from "./schema.ts";

export type {
  AttachmentRow,
  EmailRow,
  EmailStatus,
  IdempotencyRow,
  LegacyLinkRow,
  MessageLinkRow,
  RecipientRow,
  TimelineRow,
  Transport,
} from "./schema.ts";

/**
 * How long an Idempotency-Key entry answers for (X-EM-4): within it a send with the same key is a
 * replay or refused; after it the key is free again, and the retention purge deletes the entry.
 */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

/** Rows of one new message, written together. */
export interface NewMessage {
  email: EmailRow;
  attachments: AttachmentRow[];
  recipients: RecipientRow[];
  /** The message's tracked destinations, once for all its copies. */
  links: MessageLinkRow[];
  timeline: TimelineRow[];
}

/** A new message's claim on an Idempotency-Key (its API key's entry created before `expiredBefore` is replaced). */
export interface IdempotencyClaim {
  row: IdempotencyRow;
  expiredBefore: string;
}

/** What `lockEmail` reads of a message: what an outcome or a tracked event needs of it (its mode: whose webhooks and suppression list, X-EM-27). */
export type LockedEmail = Pick<EmailRow, "id" | "metadata" | "track_opens" | "track_clicks" | "test_mode">;
/** The columns of `emails` that `lockEmail` reads (not the bodies). */
export const lockedEmails = defineTable<LockedEmail>()(emails.name, ["id", "metadata", "track_opens", "track_clicks", "test_mode"]);

/** One mode's messages (X-EM-27), optionally of one overall status and/or with one tag. */
export interface EmailFilter {
  testMode: boolean;
  status?: string | undefined;
  tag?: string | undefined;
}

/** A copy's status and lease as a transaction read them: what `moveRecipient` checks are unchanged. */
export interface RecipientState {
  status: EmailStatus;
  leaseToken: string | null;
}

/** The message status derived from its copies' statuses (the domain's rule, X-EM-6). */
export type DeriveStatus = (copies: readonly EmailStatus[]) => EmailStatus;

export interface MessageStore {
  // --- The message, its attachments, its timeline, its Idempotency-Key.
  /**
   * Stores a new message (the message, its attachments, copies, links and timeline) and its
   * Idempotency-Key if any, in one transaction; resolves once it is committed. A key taken by a
   * concurrent request rejects with the unique index's error, and nothing of the message is kept.
   */
  storeMessage(m: NewMessage, idempotency?: IdempotencyClaim): Promise<void>;
  /** This API key's entry for an Idempotency-Key value (X-EM-4: another API key's is another entry). */
  findIdempotencyKey(apiKeyId: string, key: string, tx?: Tx): Promise<IdempotencyRow | undefined>;
  findEmail(id: string, tx?: Tx): Promise<EmailRow | undefined>;
  /**
   * The message, read in `tx` before anything locks one of its copies (undefined: gone, purged).
   * PostgreSQL: FOR KEY SHARE, so the retention purge (FOR UPDATE SKIP LOCKED, then a cascade to
   * the copies) skips it, or this waits for the purge before holding any copy. KEY SHARE does not
   * conflict with `setDerivedStatus`'s FOR NO KEY UPDATE. Only the columns an outcome or a tracked
   * event needs (not the bodies).
   */
  lockEmail(id: string, tx: Tx): Promise<LockedEmail | undefined>;
  /** One mode's messages, newest first (indexes emails_by_mode, emails_by_mode_status). */
  listEmails(filter: EmailFilter, page: number, pageSize: number): Promise<{ items: EmailRow[]; totalCount: number }>;
  attachmentsOf(emailId: string): Promise<AttachmentRow[]>;
  timelineOf(emailId: string): Promise<TimelineRow[]>;
  insertTimeline(rows: TimelineRow[], tx: Tx): Promise<void>;
  /**
   * After a copy changed: the message's status, `derive`d from its copies' as they are in `tx`, and
   * its `updated_at`. PostgreSQL: the message is locked first (FOR NO KEY UPDATE), so its copies are
   * read after any concurrent change to another copy committed (READ COMMITTED); else two writers
   * each see the other copy's old status and the last to commit stores a stale message status.
   */
  setDerivedStatus(emailId: string, at: string, derive: DeriveStatus, tx: Tx): Promise<void>;
  /** After an open or a click: the record changed, its status did not. */
  touchUpdatedAt(emailId: string, at: string, tx: Tx): Promise<void>;

  // --- Its copies (the outbox).
  recipientsOf(emailId: string, tx?: Tx): Promise<RecipientRow[]>;
  /** Copies of many messages at once (list pages), in message and position order. */
  recipientsOfMany(emailIds: string[]): Promise<RecipientRow[]>;
  findRecipient(id: string, tx?: Tx): Promise<RecipientRow | undefined>;
  recipientByReturnToken(token: string, tx?: Tx): Promise<RecipientRow | undefined>;
  recipientByMessageId(messageId: string, tx?: Tx): Promise<RecipientRow | undefined>;
  recipientByOpenToken(token: string, tx?: Tx): Promise<RecipientRow | undefined>;
  /**
   * Sets a copy's fields only if its status and lease are still `from` (as read earlier in `tx`):
   * false when a concurrent transaction changed the copy first (on PostgreSQL this one waits for it
   * and then finds the copy moved), so a status move never overwrites one it did not see.
   */
  moveRecipient(id: string, from: RecipientState, patch: Partial<RecipientRow>, tx: Tx): Promise<boolean>;
  /** Sets a copy's fields only if it still holds this lease (a copy whose lease expired belongs to someone else now). */
  updateLeased(id: string, leaseToken: string, patch: Partial<RecipientRow>, tx: Tx): Promise<boolean>;
  /**
   * Claims up to `limit` due copies under a lease: pending (`Queued`, or `Sent` whose holder died),
   * due, and not leased by a live holder. One statement: instances never claim the same copy.
   */
  claimDue(now: string, leaseToken: string, leaseExpiresAt: string, limit: number): Promise<RecipientRow[]>;
  /**
   * The outbound queue as its metrics see it: copies with an attempt to come (queued, deferred or
   * in flight) and the earliest due time among them, over the `next_attempt_at` index.
   */
  pendingCopies(): Promise<{ depth: number; earliestDueAt: string | null }>;
  /** Marks a copy opened once; true for the first open only. */
  firstOpen(recipientId: string, at: string, tx: Tx): Promise<boolean>;
  /** The copy's first click, kept once. */
  markClicked(recipientId: string, at: string, tx: Tx): Promise<void>;

  // --- Its tracked links (X-EM-28), and those of the earlier format.
  /** The message's tracked destinations, in order. */
  messageLinksOf(emailId: string): Promise<MessageLinkRow[]>;
  /** The destination numbered `position` of a message, for a click. */
  messageLink(emailId: string, position: number, tx: Tx): Promise<string | undefined>;
  /** Marks link `position` of a copy clicked; true for its first click only (safe under concurrency: the key decides). */
  firstLinkClick(recipientId: string, position: number, at: string, tx: Tx): Promise<boolean>;
  /** A copy's click links of the earlier format, in order (messages accepted before migration 0009). */
  legacyLinksOf(recipientId: string): Promise<LegacyLinkRow[]>;
  /** A click link of the earlier format by its stored token. */
  legacyLinkByToken(token: string, tx?: Tx): Promise<LegacyLinkRow | undefined>;
  /** Marks a link of the earlier format clicked once; true for the first click only (safe under concurrency). */
  legacyFirstClick(token: string, at: string, tx: Tx): Promise<boolean>;
}

/**
 * The claim is each engine's own (sqlite/messages.ts, postgres/messages.ts): on PostgreSQL it skips
 * the copies another instance's claim holds (SKIP LOCKED), which knex does not build for SQLite.
 */
export type PortableMessageStore = Omit<MessageStore, "claimDue">;

export function knexMessages(db: Knex): PortableMessageStore {
  return {
    async storeMessage(m, idempotency) {
      await db.transaction(async (tx) => {
        await tx(emails.name).insert(m.email);
        await insertChunked(tx, attachments.name, m.attachments);
        await insertChunked(tx, recipients.name, m.recipients);
        await insertChunked(tx, messageLinks.name, m.links);
        await insertChunked(tx, timeline.name, m.timeline);
        if (idempotency) {
          await tx(idempotencyKeys.name)
            .where({ api_key_id: idempotency.row.api_key_id, key: idempotency.row.key })
            .andWhere("created_at", "<", idempotency.expiredBefore)
            .delete();
          await tx(idempotencyKeys.name).insert(idempotency.row);
        }
      });
    },
    findIdempotencyKey: (apiKeyId, key, tx) =>
      (tx ?? db)<IdempotencyRow>(idempotencyKeys.name).where({ api_key_id: apiKeyId, key }).first(),
    findEmail: (id, tx) => (tx ?? db)<EmailRow>(emails.name).where({ id }).first(),
    lockEmail: (id, tx) =>
      tx<EmailRow>(emails.name)
        .where({ id })
        .forKeyShare()
        .first(...lockedEmails.columns),
    listEmails(filter, page, pageSize) {
      const q = db<EmailRow>(emails.name).where("test_mode", filter.testMode);
      if (filter.status) q.where("status", filter.status);
      // Tags are [A-Za-z0-9_-]: only `_` needs escaping in LIKE.
      if (filter.tag) q.whereRaw("tags like ? escape '\\'", [`%"${filter.tag.replace(/_/g, "\\_")}"%`]);
      return pageNewestFirst<EmailRow>(q, page, pageSize);
    },
    attachmentsOf: (emailId) => db<AttachmentRow>(attachments.name).where({ email_id: emailId }).orderBy("position"),
    timelineOf: (emailId) =>
      db<TimelineRow>(timeline.name)
        .where({ email_id: emailId })
        .orderBy([{ column: "created_at" }, { column: "id" }]),
    insertTimeline: (rows, tx) => insertChunked(tx, timeline.name, rows),
    async setDerivedStatus(emailId, at, derive, tx) {
      // FOR NO KEY UPDATE, the lock the UPDATE below takes anyway: FOR UPDATE would also wait for the
      // KEY SHARE locks that inserting timeline rows takes (the foreign key), and two writers upgrading deadlock.
      await tx(emails.name).where({ id: emailId }).select("id").forNoKeyUpdate();
      const copies = await tx<RecipientRow>(recipients.name).where({ email_id: emailId }).select("status");
      await tx(emails.name)
        .where({ id: emailId })
        .update({ updated_at: at, status: derive(copies.map((c) => c.status)) });
    },
    async touchUpdatedAt(emailId, at, tx) {
      await tx(emails.name).where({ id: emailId }).update({ updated_at: at });
    },

    recipientsOf: (emailId, tx) => (tx ?? db)<RecipientRow>(recipients.name).where({ email_id: emailId }).orderBy("position"),
    recipientsOfMany: async (emailIds) =>
      emailIds.length
        ? db<RecipientRow>(recipients.name)
            .whereIn("email_id", emailIds)
            .orderBy([{ column: "email_id" }, { column: "position" }])
        : [],
    findRecipient: (id, tx) => (tx ?? db)<RecipientRow>(recipients.name).where({ id }).first(),
    recipientByReturnToken: (token, tx) => (tx ?? db)<RecipientRow>(recipients.name).where({ return_token: token }).first(),
    recipientByMessageId: (messageId, tx) => (tx ?? db)<RecipientRow>(recipients.name).where({ message_id: messageId }).first(),
    recipientByOpenToken: (token, tx) => (tx ?? db)<RecipientRow>(recipients.name).where({ open_token: token }).first(),
    async moveRecipient(id, from, patch, tx) {
      const q = tx(recipients.name).where({ id, status: from.status });
      if (from.leaseToken === null) q.whereNull("lease_token");
      else q.where("lease_token", from.leaseToken);
      return (await q.update(patch)) > 0;
    },
    updateLeased: async (id, leaseToken, patch, tx) => (await tx(recipients.name).where({ id, lease_token: leaseToken }).update(patch)) > 0,
    async pendingCopies() {
      const row = (await db(recipients.name)
        .whereNotNull("next_attempt_at")
        .count({ depth: "*" })
        .min({ earliest: "next_attempt_at" })
        .first()) as { depth: number | string; earliest: string | null } | undefined;
      return { depth: Number(row?.depth ?? 0), earliestDueAt: row?.earliest ?? null };
    },
    firstOpen: async (recipientId, at, tx) =>
      (await tx(recipients.name).where({ id: recipientId }).whereNull("opened_at").update({ opened_at: at })) > 0,
    async markClicked(recipientId, at, tx) {
      await tx(recipients.name).where({ id: recipientId }).whereNull("clicked_at").update({ clicked_at: at });
    },

    messageLinksOf: (emailId) => db<MessageLinkRow>(messageLinks.name).where({ email_id: emailId }).orderBy("position"),
    messageLink: async (emailId, position, tx) =>
      (await tx<MessageLinkRow>(messageLinks.name).where({ email_id: emailId, position }).first("url"))?.url,
    firstLinkClick: async (recipientId, position, at, tx) =>
      (
        await tx(linkClicks.name)
          .insert({ recipient_id: recipientId, position, clicked_at: at })
          .onConflict(["recipient_id", "position"])
          .ignore()
          .returning("position")
      ).length > 0,
    legacyLinksOf: (recipientId) => db<LegacyLinkRow>(legacyLinks.name).where({ recipient_id: recipientId }).orderBy("position"),
    legacyLinkByToken: (token, tx) => (tx ?? db)<LegacyLinkRow>(legacyLinks.name).where({ token }).first(),
    legacyFirstClick: async (token, at, tx) =>
      (await tx(legacyLinks.name).where({ token }).whereNull("clicked_at").update({ clicked_at: at })) > 0,
  };
}
