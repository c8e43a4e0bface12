/**
 * Fewer B-trees per message, so that the retention purge writes fewer pages. Deleting a message
 * removes an entry from every index of its rows (on SQLite all in the purge batch's COMMIT): 14
 * B-trees per finished message before this, 11 after
 * (bench/results/2026-11-27-scale-messages-purge.md). Every query that used a changed index still
 * searches one (test/email/retention.test.ts, "email indexes after 0007").
 * - `email_recipients_due (next_attempt_at)` → `email_recipients_pending (next_attempt_at) WHERE
 *   next_attempt_at IS NOT NULL`: the outbox. Its two queries (claimDue, pendingCopies) ask only for
 *   copies with a next attempt; a copy with its outcome has none, and sat in the index under NULL.
 * - `email_events`: keyed by `(email_id, created_at, id)`, the timeline's order, instead of by `id`
 *   with a second index `email_events_timeline (email_id, created_at)`. Nothing looks an event up by
 *   its id alone; the timeline and the cascade from its message read by `email_id`, now without a
 *   sort. On SQLite the table is rebuilt WITHOUT ROWID, so its rows live in that one B-tree (three
 *   before: the rows, the id, the timeline); on PostgreSQL the new key's index replaces the other two.
 * Not changed: `emails_by_status` could hold every status but Delivered, but a list filtered by
 * Delivered would then count its total by reading every message row (the status column comes after
 * the bodies) instead of an index's entries.
 * Safe on a database with data: SQLite rebuilds the table in the migration's transaction (copying
 * every event, so it takes time in proportion to the table); PostgreSQL builds each new index with
 * a plain CREATE INDEX, holding off writes to its table while it builds: on a large deployment build
 * them beforehand with CREATE INDEX CONCURRENTLY under the same names (docs/operations.md, "Data
 * growth"), and the migration then finds nothing left to build.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { isPostgres } from "../../../../server/storage/dialect.ts";

const PARTIAL_INDEXES = [
  {
    table: "email_recipients",
    name: "email_recipients_pending",
    columns: "next_attempt_at",
    where: "next_attempt_at IS NOT NULL",
    replaces: "email_recipients_due",
  },
] as const;

/** SQLite: email_events rebuilt with `key` as its primary key (`rowid` adds WITHOUT ROWID), the rows copied. */
async function rebuildEvents(db: Knex, key: string, withoutRowid: boolean): Promise<void> {
  await db.raw(`CREATE TABLE email_events_rebuilt (
    id varchar(36) NOT NULL,
    email_id varchar(36) NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    recipient_id varchar(36) NOT NULL,
    type varchar(32) NOT NULL,
    data text NOT NULL,
    created_at varchar(24) NOT NULL,
    PRIMARY KEY (${key})
  )${withoutRowid ? " WITHOUT ROWID" : ""}`);
  await db.raw(`INSERT INTO email_events_rebuilt (id, email_id, recipient_id, type, data, created_at)
    SELECT id, email_id, recipient_id, type, data, created_at FROM email_events`);
  await db.raw("DROP TABLE email_events");
  await db.raw("ALTER TABLE email_events_rebuilt RENAME TO email_events");
}

export const messageIndexes: Migration = {
  async up(db: Knex) {
    for (const ix of PARTIAL_INDEXES) {
      await db.raw(`CREATE INDEX IF NOT EXISTS ${ix.name} ON ${ix.table} (${ix.columns}) WHERE ${ix.where}`);
      await db.raw(`DROP INDEX IF EXISTS ${ix.replaces}`);
    }
    if (isPostgres(db)) {
      await db.raw("CREATE UNIQUE INDEX IF NOT EXISTS email_events_timeline_key ON email_events (email_id, created_at, id)");
      await db.raw("ALTER TABLE email_events DROP CONSTRAINT email_events_pkey");
      await db.raw("DROP INDEX IF EXISTS email_events_timeline");
      // Takes the index over (renamed to the constraint's name): nothing is built again.
      await db.raw("ALTER TABLE email_events ADD CONSTRAINT email_events_pkey PRIMARY KEY USING INDEX email_events_timeline_key");
    } else {
      await rebuildEvents(db, "email_id, created_at, id", true);
    }
  },
  async down(db: Knex) {
    for (const ix of PARTIAL_INDEXES) {
      await db.raw(`CREATE INDEX IF NOT EXISTS ${ix.replaces} ON ${ix.table} (${ix.columns})`);
      await db.raw(`DROP INDEX IF EXISTS ${ix.name}`);
    }
    if (isPostgres(db)) {
      await db.raw("ALTER TABLE email_events DROP CONSTRAINT email_events_pkey");
      await db.raw("ALTER TABLE email_events ADD CONSTRAINT email_events_pkey PRIMARY KEY (id)");
    } else {
      await rebuildEvents(db, "id", false);
    }
    await db.raw("CREATE INDEX IF NOT EXISTS email_events_timeline ON email_events (email_id, created_at)");
  },
};
