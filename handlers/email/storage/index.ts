/**
 * The email service's storage: each store's implementation, chosen once for the database the
 * service opened (svix's queue backends are chosen the same way). The one place in email's storage
 * that looks at the dialect; below it, each store is its interface (ADR 0002).
 */
import type { Knex } from "knex";
import { dialectOf } from "../../../server/storage/dialect.ts";
import { type ApiKeyStore, knexApiKeys } from "./api-keys.ts";
import type { MessageStore } from "./messages.ts";
import { postgresMessages } from "./postgres/messages.ts";
import { sqliteApiKeys } from "./sqlite/api-keys.ts";
import { sqliteMessages } from "./sqlite/messages.ts";
import { sqliteSuppressions } from "./sqlite/suppressions.ts";
import { knexSuppressions, type SuppressionStore } from "./suppressions.ts";

/**
 * The email database's schema steps, in order: what the service opens its database with
 * (`openDatabase` runs those not yet applied), and what tools that use the tables without the
 * service open it with (`npm run migrate`, the benchmarks' bulk seeding).
 */
export { migrations } from "./migrations/index.ts";
/** What the service's retention purge deletes, table by table (`createPurger` runs them). */
export { emailRetentionRules } from "./retention-rules.ts";

export interface EmailStorage {
  messages: MessageStore;
  apiKeys: ApiKeyStore;
  suppressions: SuppressionStore;
}

export function createEmailStorage(db: Knex): EmailStorage {
  if (dialectOf(db) === "sqlite") {
    return { messages: sqliteMessages(db), apiKeys: sqliteApiKeys(db), suppressions: sqliteSuppressions(db) };
  }
  return { messages: postgresMessages(db), apiKeys: knexApiKeys(db), suppressions: knexSuppressions(db) };
}
