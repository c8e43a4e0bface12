/**
 * The registration attempts store: one row per registration through POST /api/users, by client
 * address, counted for its rate limit. In the database, so every instance counts the same attempts.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { registrationAttempts } from "./schema.ts";

export interface RegistrationAttemptStore {
  record(address: string, at: string, tx?: Tx): Promise<void>;
  /** Attempts from `address` after `since`, with the oldest one's time (for Retry-After). */
  since(address: string, since: string, tx?: Tx): Promise<{ count: number; oldest: string | undefined }>;
  /** Forgets the attempts at or before `before`. */
  prune(before: string, tx?: Tx): Promise<void>;
}

export function knexRegistrationAttempts(db: Knex): RegistrationAttemptStore {
  return {
    async record(address, at, tx) {
      await (tx ?? db)(registrationAttempts.name).insert({ address, at });
    },
    async since(address, since, tx) {
      const row = (await (tx ?? db)(registrationAttempts.name)
        .where({ address })
        .andWhere("at", ">", since)
        .count({ n: "*" })
        .min({ oldest: "at" })
        .first()) as { n: number | string; oldest: string | null } | undefined;
      return { count: Number(row?.n ?? 0), oldest: row?.oldest ?? undefined };
    },
    async prune(before, tx) {
      await (tx ?? db)(registrationAttempts.name).where("at", "<=", before).delete();
    },
  };
}
