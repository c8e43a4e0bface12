/**
 * The sign-in throttle's storage over knex (sign-in-throttle.ts), for any service: a table of
 * failures `(id, key, failed_at)` indexed on `(key, failed_at)`, and a table of known addresses
 * `(key, last_success_at)` keyed by the account-at-address key. In the database, so every
 * instance agrees.
 *
 * Serialising attempts: on SQLite the one connection runs one transaction at a time
 * (`knexSignInThrottleStore`); on PostgreSQL (`postgresSignInThrottleStore`) each attempt takes
 * transaction-scoped advisory locks on its account and its address, in a fixed order (no deadlock),
 * so attempts on the same account or from the same address read each other's reservations. The
 * service's `storage/index.ts` picks one.
 */
import type { Knex } from "knex";
import type { FailureStats, SignInThrottleStore, ThrottleKeys } from "./sign-in-throttle.ts";

export interface ThrottleTables {
  failures: string;
  knownAddresses: string;
}

/** Rows per prune statement: a bounded, short delete. */
const PRUNE_BATCH = 500;

export interface ThrottleStoreOptions {
  /** Whether the store prunes old rows itself (a service without a retention purge for them). */
  prune?: boolean;
}

/** The store where transactions on one database run one at a time (SQLite's one connection). */
export const knexSignInThrottleStore = (db: Knex, tables: ThrottleTables, options: ThrottleStoreOptions = {}): SignInThrottleStore =>
  throttleStore(db, tables, options, async () => {});

/** The store on PostgreSQL: each attempt first locks its account and its address, in key order. */
export const postgresSignInThrottleStore = (db: Knex, tables: ThrottleTables, options: ThrottleStoreOptions = {}): SignInThrottleStore =>
  throttleStore(db, tables, options, async (trx, keys) => {
    for (const key of [keys.account, keys.address].sort()) {
      await trx.raw("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [`${tables.failures}:${key}`]);
    }
  });

function throttleStore(
  db: Knex,
  tables: ThrottleTables,
  options: ThrottleStoreOptions,
  serialise: (trx: Knex.Transaction, keys: ThrottleKeys) => Promise<void>,
): SignInThrottleStore {
  const store: SignInThrottleStore = {
    async reserve(keys: ThrottleKeys, times, decide) {
      return db.transaction(async (trx) => {
        await serialise(trx, keys);
        const rows = (await trx(tables.failures)
          .select("key")
          .count({ n: "*" })
          .min({ oldest: "failed_at" })
          .max({ newest: "failed_at" })
          .whereIn("key", [keys.pair, keys.address, keys.account])
          .andWhere("failed_at", ">=", times.since)
          .groupBy("key")) as Array<{ key: string; n: number | string; oldest: string; newest: string }>;
        const stats = new Map<string, FailureStats>(rows.map((r) => [r.key, { count: Number(r.n), oldest: r.oldest, newest: r.newest }]));
        const known = Boolean(
          await trx(tables.knownAddresses).where({ key: keys.pair }).andWhere("last_success_at", ">=", times.knownSince).first("key"),
        );
        const refused = decide(stats, known);
        if (refused) return { refused };
        const inserted = (await trx(tables.failures)
          .insert([keys.pair, keys.address, keys.account].map((key) => ({ key, failed_at: times.at })))
          .returning("id")) as Array<{ id: number } | number>;
        return { ids: inserted.map((r) => Number(typeof r === "object" ? r.id : r)) };
      });
    },

    async succeeded(ids, keys, at) {
      await db.transaction(async (trx) => {
        await trx(tables.failures).whereIn("id", ids).delete();
        await trx(tables.failures).where({ key: keys.pair }).delete();
        await trx(tables.knownAddresses).insert({ key: keys.pair, last_success_at: at }).onConflict("key").merge();
      });
    },

    async forgetAccount(account, tx) {
      await (tx ?? db)(tables.failures).where({ key: account }).delete();
    },
  };

  if (options.prune) {
    store.prune = async (failuresBefore, knownBefore) => {
      const oldIds = db(tables.failures).select("id").where("failed_at", "<", failuresBefore).limit(PRUNE_BATCH);
      await db(tables.failures).whereIn("id", oldIds).delete();
      const oldKeys = db(tables.knownAddresses).select("key").where("last_success_at", "<", knownBefore).limit(PRUNE_BATCH);
      await db(tables.knownAddresses).whereIn("key", oldKeys).delete();
    };
  }
  return store;
}
