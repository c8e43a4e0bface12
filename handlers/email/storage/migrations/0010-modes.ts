/**
 * Test and live apart (X-EM-27) and an Idempotency-Key per API key (X-EM-4):
 * - `idempotency_keys` is keyed by `(api_key_id, key)`: the same value from two API keys is two
 *   entries. An entry made before takes the API key of the message it created. `email_id` becomes
 *   unique (each entry names the message it created), the retention purge's one-column key.
 * - `suppressions` gets `test_mode` and is keyed by `(test_mode, address_key)`: one list per mode.
 *   An entry made before is a test entry when the message whose bounce or complaint added it was a
 *   test message (those are simulator addresses: a test key sends nowhere else), else live, as
 *   every manual entry is (it kept live mail from the address, and still does).
 *   `suppressions_recent` lists one mode, newest first: `(test_mode, created_at, address_key)`.
 * - `emails`: the lists of one mode, newest first, with or without a status, and their totals,
 *   each read from an index: `emails_by_mode (test_mode, created_at, id)` and
 *   `emails_by_mode_status (test_mode, status, created_at, id)`, which replaces `emails_by_status`.
 *   `emails_recent (created_at, id)` stays: the retention purge walks it across both modes.
 * Webhook endpoints need nothing: their `scope` column is the mode (`default`, the scope every
 * endpoint had, is live; `test` is test: domain/events.ts).
 * Safe on a database with data: SQLite rebuilds the two small tables in the migration's
 * transaction; PostgreSQL changes their keys in place, and builds the two message indexes with a
 * plain CREATE INDEX, holding off new messages while it builds: on a large deployment build them
 * beforehand with CREATE INDEX CONCURRENTLY under the same names (docs/operations.md, "Data
 * growth"), and the migration then finds nothing left to build.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { isPostgres } from "../../../../server/storage/dialect.ts";

const MESSAGE_INDEXES = [
  { name: "emails_by_mode", columns: "test_mode, created_at, id" },
  { name: "emails_by_mode_status", columns: "test_mode, status, created_at, id" },
] as const;

/** SQLite: a table rebuilt as `create` (named `<table>_rebuilt`), its rows copied by `copy`, then renamed in place. */
async function rebuild(db: Knex, table: string, create: string, copy: string, indexes: string[]): Promise<void> {
  await db.raw(create);
  await db.raw(copy);
  await db.raw(`DROP TABLE ${table}`);
  await db.raw(`ALTER TABLE ${table}_rebuilt RENAME TO ${table}`);
  for (const index of indexes) await db.raw(index);
}

const IDEMPOTENCY_INDEXES = [
  "CREATE INDEX idempotency_keys_by_created_at ON idempotency_keys (created_at)",
  "CREATE UNIQUE INDEX idempotency_keys_by_email ON idempotency_keys (email_id)",
];

export const modes: Migration = {
  async up(db: Knex) {
    if (isPostgres(db)) {
      await db.raw("ALTER TABLE idempotency_keys ADD COLUMN api_key_id varchar(36)");
      await db.raw("UPDATE idempotency_keys k SET api_key_id = e.api_key_id FROM emails e WHERE e.id = k.email_id");
      await db.raw("ALTER TABLE idempotency_keys ALTER COLUMN api_key_id SET NOT NULL");
      await db.raw("ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey");
      await db.raw("ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (api_key_id, key)");
      await db.raw("DROP INDEX IF EXISTS idempotency_keys_by_email");
      await db.raw(IDEMPOTENCY_INDEXES[1]!);

      await db.raw("ALTER TABLE suppressions ADD COLUMN test_mode boolean NOT NULL DEFAULT false");
      await db.raw("ALTER TABLE suppressions ALTER COLUMN test_mode DROP DEFAULT");
      await db.raw("UPDATE suppressions s SET test_mode = true FROM emails e WHERE e.id = s.email_id AND e.test_mode");
      await db.raw("ALTER TABLE suppressions DROP CONSTRAINT suppressions_pkey");
      await db.raw("ALTER TABLE suppressions ADD CONSTRAINT suppressions_pkey PRIMARY KEY (test_mode, address_key)");
      await db.raw("DROP INDEX IF EXISTS suppressions_recent");
      await db.raw("CREATE INDEX suppressions_recent ON suppressions (test_mode, created_at, address_key)");
    } else {
      await rebuild(
        db,
        "idempotency_keys",
        `CREATE TABLE idempotency_keys_rebuilt (
          api_key_id varchar(36) NOT NULL,
          key varchar(255) NOT NULL,
          request_hash varchar(64) NOT NULL,
          email_id varchar(36) NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
          created_at varchar(24) NOT NULL,
          PRIMARY KEY (api_key_id, key)
        ) WITHOUT ROWID`,
        `INSERT INTO idempotency_keys_rebuilt (api_key_id, key, request_hash, email_id, created_at)
          SELECT e.api_key_id, k.key, k.request_hash, k.email_id, k.created_at FROM idempotency_keys k JOIN emails e ON e.id = k.email_id`,
        IDEMPOTENCY_INDEXES,
      );
      await rebuild(
        db,
        "suppressions",
        `CREATE TABLE suppressions_rebuilt (
          test_mode boolean NOT NULL,
          address_key varchar(254) NOT NULL,
          address varchar(254) NOT NULL,
          reason varchar(16) NOT NULL,
          email_id varchar(36),
          detail text,
          created_at varchar(24) NOT NULL,
          PRIMARY KEY (test_mode, address_key)
        ) WITHOUT ROWID`,
        `INSERT INTO suppressions_rebuilt (test_mode, address_key, address, reason, email_id, detail, created_at)
          SELECT COALESCE((SELECT e.test_mode FROM emails e WHERE e.id = s.email_id), 0), s.address_key, s.address, s.reason,
                 s.email_id, s.detail, s.created_at
            FROM suppressions s`,
        ["CREATE INDEX suppressions_recent ON suppressions (test_mode, created_at, address_key)"],
      );
    }
    // IF NOT EXISTS: a large PostgreSQL deployment may have built them beforehand, CONCURRENTLY (docs/operations.md, "Data growth").
    for (const ix of MESSAGE_INDEXES) await db.raw(`CREATE INDEX IF NOT EXISTS ${ix.name} ON emails (${ix.columns})`);
    await db.raw("DROP INDEX IF EXISTS emails_by_status");
  },

  /** Back to one world: where two API keys used one Idempotency-Key, or an address has entries in both modes, the older is kept. */
  async down(db: Knex) {
    await db.raw("CREATE INDEX IF NOT EXISTS emails_by_status ON emails (status, created_at, id)");
    for (const ix of MESSAGE_INDEXES) await db.raw(`DROP INDEX IF EXISTS ${ix.name}`);
    await db.raw(`DELETE FROM idempotency_keys WHERE EXISTS (SELECT 1 FROM idempotency_keys o WHERE o.key = idempotency_keys.key
      AND (o.created_at < idempotency_keys.created_at OR (o.created_at = idempotency_keys.created_at AND o.email_id < idempotency_keys.email_id)))`);
    await db.raw(`DELETE FROM suppressions WHERE EXISTS (SELECT 1 FROM suppressions o WHERE o.address_key = suppressions.address_key
      AND (o.created_at < suppressions.created_at OR (o.created_at = suppressions.created_at AND o.test_mode < suppressions.test_mode)))`);
    if (isPostgres(db)) {
      await db.raw("ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey");
      await db.raw("ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (key)");
      await db.raw("ALTER TABLE idempotency_keys DROP COLUMN api_key_id");
      await db.raw("DROP INDEX IF EXISTS idempotency_keys_by_email");
      await db.raw("CREATE INDEX idempotency_keys_by_email ON idempotency_keys (email_id)");
      await db.raw("ALTER TABLE suppressions DROP CONSTRAINT suppressions_pkey");
      await db.raw("ALTER TABLE suppressions ADD CONSTRAINT suppressions_pkey PRIMARY KEY (address_key)");
      await db.raw("DROP INDEX IF EXISTS suppressions_recent");
      await db.raw("ALTER TABLE suppressions DROP COLUMN test_mode");
      await db.raw("CREATE INDEX suppressions_recent ON suppressions (created_at, address_key)");
    } else {
      await rebuild(
        db,
        "idempotency_keys",
        `CREATE TABLE idempotency_keys_rebuilt (
          key varchar(255) NOT NULL PRIMARY KEY,
          request_hash varchar(64) NOT NULL,
          email_id varchar(36) NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
          created_at varchar(24) NOT NULL
        )`,
        `INSERT INTO idempotency_keys_rebuilt (key, request_hash, email_id, created_at)
          SELECT key, request_hash, email_id, created_at FROM idempotency_keys`,
        [
          "CREATE INDEX idempotency_keys_by_created_at ON idempotency_keys (created_at)",
          "CREATE INDEX idempotency_keys_by_email ON idempotency_keys (email_id)",
        ],
      );
      await rebuild(
        db,
        "suppressions",
        `CREATE TABLE suppressions_rebuilt (
          address_key varchar(254) NOT NULL PRIMARY KEY,
          address varchar(254) NOT NULL,
          reason varchar(16) NOT NULL,
          email_id varchar(36),
          detail text,
          created_at varchar(24) NOT NULL
        )`,
        `INSERT INTO suppressions_rebuilt (address_key, address, reason, email_id, detail, created_at)
          SELECT address_key, address, reason, email_id, detail, created_at FROM suppressions`,
        ["CREATE INDEX suppressions_recent ON suppressions (created_at, address_key)"],
      );
    }
  },
};
