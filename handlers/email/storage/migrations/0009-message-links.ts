/**
 * Click tracking stored once per message (X-EM-28). Before, every copy had a row per link
 * in `email_links` (a random token each): a send of 50 copies of a body with thousands of links
 * wrote hundreds of thousands of rows. Now:
 * - `message_links`: a message's tracked destinations, numbered in document order (at most 1000);
 *   a copy's click token is signed and names the copy and the number (domain/click-links.ts);
 * - `link_clicks`: the first click of each (copy, link), written when it happens (the first click
 *   is an event, a repeat is not), so rows follow clicks, not sends.
 * `email_links` stays, read only: click links already mailed carry its tokens, and they keep working
 * until retention purges their messages (with them their rows); no new rows are written there.
 * Both tables are keyed by their parent first, so the retention purge's cascades search the key;
 * on SQLite they are WITHOUT ROWID: one B-tree each, no rowid table beside the key.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { isPostgres } from "../../../../server/storage/dialect.ts";

export const messageLinks: Migration = {
  async up(db: Knex) {
    const clustered = isPostgres(db) ? "" : " WITHOUT ROWID";
    await db.raw(`CREATE TABLE message_links (
      email_id varchar(36) NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
      position integer NOT NULL,
      url text NOT NULL,
      PRIMARY KEY (email_id, position)
    )${clustered}`);
    await db.raw(`CREATE TABLE link_clicks (
      recipient_id varchar(36) NOT NULL REFERENCES email_recipients (id) ON DELETE CASCADE,
      position integer NOT NULL,
      clicked_at varchar(24) NOT NULL,
      PRIMARY KEY (recipient_id, position)
    )${clustered}`);
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists("link_clicks");
    await db.schema.dropTableIfExists("message_links");
  },
};
