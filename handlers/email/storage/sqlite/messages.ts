/**
 * The message store on SQLite: what a message runs on its way (acceptance, the claim, the copy's
 * composition, the outcome) as statements prepared once per connection
 * (server/storage/sqlite/statements.ts), run on the connection of the transaction they are given
 * (or the pool's). New messages are group-committed (server/storage/sqlite/group-commit.ts): those
 * that arrive together share one COMMIT, each in a savepoint of its own, and each is answered only
 * once it is durable. Everything else is the knex implementation's.
 */
import type { Knex } from "knex";
import { groupCommit } from "../../../../server/storage/sqlite/group-commit.ts";
import { preparedStatements, statementFor, type Statements } from "../../../../server/storage/sqlite/statements.ts";
import { defineTable, type Table } from "../../../../server/storage/schema.ts";
import { type IdempotencyClaim, knexMessages, lockedEmails, type MessageStore, type NewMessage } from "../messages.ts";
import { attachments, emails, idempotencyKeys, legacyLinks, messageLinks, type RecipientRow, recipients, timeline } from "../schema.ts";

/** The one column the derived status reads of each copy. */
const copyStatuses = defineTable<Pick<RecipientRow, "status">>()(recipients.name, ["status"]);

/**
 * Written plainly: the layer applies SQLite's planner rule when it prepares them (a bound `= ?`
 * becomes `= +?`, a bound LIMIT `LIMIT +?`), so the reads with an ORDER BY and the claim's LIMIT
 * stay prepared (test/storage/sqlite-statement-reuse.test.ts).
 */
export const MESSAGE_STATEMENTS = {
  insertEmail: emails.insertNamed(),
  insertAttachment: attachments.insertNamed(),
  insertRecipient: recipients.insertNamed(),
  insertLink: messageLinks.insertNamed(),
  insertTimeline: timeline.insertNamed(),
  deleteExpiredKey: `DELETE FROM ${idempotencyKeys.name} WHERE api_key_id = ? AND key = ? AND created_at < ?`,
  insertKey: idempotencyKeys.insertNamed(),
  findEmail: `SELECT ${emails.list()} FROM ${emails.name} WHERE id = ?`,
  lockEmail: `SELECT ${lockedEmails.list()} FROM ${emails.name} WHERE id = ?`,
  findRecipient: `SELECT ${recipients.list()} FROM ${recipients.name} WHERE id = ?`,
  attachmentsOf: `SELECT ${attachments.list()} FROM ${attachments.name} WHERE email_id = ? ORDER BY position`,
  messageLinksOf: `SELECT ${messageLinks.list()} FROM ${messageLinks.name} WHERE email_id = ? ORDER BY position`,
  legacyLinksOf: `SELECT ${legacyLinks.list()} FROM ${legacyLinks.name} WHERE recipient_id = ? ORDER BY position`,
  statusesOf: `SELECT ${copyStatuses.list()} FROM ${recipients.name} WHERE email_id = ?`,
  setEmailStatus: `UPDATE ${emails.name} SET updated_at = ?, status = ? WHERE id = ?`,
  claimDue: `UPDATE ${recipients.name} SET lease_token = ?, lease_expires_at = ?, status = 'Sent', updated_at = ?
    WHERE id IN (SELECT id FROM ${recipients.name} WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?
                 AND (lease_expires_at IS NULL OR lease_expires_at < ?) ORDER BY next_attempt_at LIMIT ?)
    RETURNING ${recipients.list()}`,
} as const;

/** The row of `table` in a statement's answer, if any. */
const rowOf = <Row extends object>(table: Table<Row>, row: Record<string, unknown> | undefined): Row | undefined => row && table.read(row);

/** better-sqlite3 binds numbers, not booleans. */
const bit = (v: boolean | number) => (v ? 1 : 0);

/** Which copy an update writes: one still under a lease, one still as it was read (status and lease, the lease maybe none). */
const UPDATE_CONDITIONS = {
  leased: " AND lease_token = @__lease",
  asRead: " AND status = @__status AND lease_token IS @__lease",
} as const;

/** A patch as `UPDATE email_recipients SET a = @a, … WHERE id = @__id [AND …]` (its columns come from code). */
function updateSql(patch: Partial<RecipientRow>, condition: keyof typeof UPDATE_CONDITIONS): string {
  const columns = recipients.columns.filter((c) => patch[c] !== undefined);
  return `UPDATE ${recipients.name} SET ${columns.map((c) => `${c} = @${c}`).join(", ")} WHERE id = @__id${UPDATE_CONDITIONS[condition]}`;
}

function writeMessage(s: Statements<keyof typeof MESSAGE_STATEMENTS>, m: NewMessage, idempotency: IdempotencyClaim | undefined): void {
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

export function sqliteMessages(db: Knex): MessageStore {
  const on = preparedStatements(MESSAGE_STATEMENTS);
  const commitTogether = groupCommit<keyof typeof MESSAGE_STATEMENTS>((fn) => on(db, fn));
  return {
    ...knexMessages(db),
    async storeMessage(m, idempotency) {
      await commitTogether((s) => {
        writeMessage(s, m, idempotency);
        return true;
      });
    },
    findEmail: (id, tx) => on(tx ?? db, (s) => rowOf(emails, s.findEmail.get(id))),
    lockEmail: (id, tx) => on(tx, (s) => rowOf(lockedEmails, s.lockEmail.get(id))),
    attachmentsOf: (emailId) => on(db, (s) => s.attachmentsOf.all(emailId).map(attachments.read)),
    insertTimeline: (rows, tx) =>
      on(tx, (s) => {
        for (const row of rows) s.insertTimeline.run(row);
      }),
    setDerivedStatus: (emailId, at, derive, tx) =>
      on(tx, (s) => {
        const statuses = s.statusesOf.all(emailId).map((row) => copyStatuses.read(row).status);
        s.setEmailStatus.run(at, derive(statuses), emailId);
      }),

    findRecipient: (id, tx) => on(tx ?? db, (s) => rowOf(recipients, s.findRecipient.get(id))),
    moveRecipient: (id, from, patch, tx) =>
      on(
        tx,
        (_s, conn) =>
          statementFor(conn, updateSql(patch, "asRead")).run({ ...patch, __id: id, __status: from.status, __lease: from.leaseToken })
            .changes > 0,
      ),
    updateLeased: (id, leaseToken, patch, tx) =>
      on(tx, (_s, conn) => statementFor(conn, updateSql(patch, "leased")).run({ ...patch, __id: id, __lease: leaseToken }).changes > 0),
    claimDue: (now, leaseToken, leaseExpiresAt, limit) =>
      on(db, (s) => s.claimDue.all(leaseToken, leaseExpiresAt, now, now, now, limit).map(recipients.read)),

    messageLinksOf: (emailId) => on(db, (s) => s.messageLinksOf.all(emailId).map(messageLinks.read)),
    legacyLinksOf: (recipientId) => on(db, (s) => s.legacyLinksOf.all(recipientId).map(legacyLinks.read)),
  };
}
