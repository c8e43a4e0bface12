/**
 * The password resets store (X-ID-RST-1..7): one row per request of a reset link, by the SHA-256
 * of its token. A link is spent by one conditional UPDATE whose row count decides which of
 * concurrent submissions wins (ADR 0002); the loser writes nothing.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type PasswordResetRow, passwordResets } from "./schema.ts";

export interface PasswordResetStore {
  insert(row: PasswordResetRow, tx?: Tx): Promise<void>;
  /** Requests after `since` for the email key, and from the client address (the limits of X-ID-RST-6). */
  countSince(q: { emailKey: string; clientAddress: string; since: string }, tx?: Tx): Promise<{ byEmail: number; byAddress: number }>;
  /** Ends every link of the user that is neither used nor ended yet (a newer request, a reset). */
  endOpen(userId: string, at: string, tx?: Tx): Promise<void>;
  /** The link of this token hash while it is usable at `now`: for an account, unused, not ended, not expired. */
  findUsable(tokenHash: string, now: string, tx?: Tx): Promise<PasswordResetRow | undefined>;
  /**
   * Spends the link if it is usable at `now` (one conditional update) and returns it; undefined
   * when it is not, or when a concurrent submission spent it first.
   */
  spend(tokenHash: string, now: string, tx?: Tx): Promise<PasswordResetRow | undefined>;
  findById(id: string, tx?: Tx): Promise<PasswordResetRow | undefined>;
}

export function knexPasswordResets(db: Knex): PasswordResetStore {
  const usable = (q: Knex.QueryBuilder, tokenHash: string, now: string) =>
    q.where({ token_hash: tokenHash }).whereNotNull("user_id").whereNull("used_at").whereNull("ended_at").andWhere("expires_at", ">", now);
  const count = async (on: Knex | Tx, column: "email_key" | "client_address", value: string, since: string) => {
    const row = (await on(passwordResets.name).where(column, value).andWhere("created_at", ">", since).count({ n: "*" }).first()) as
      | { n: number | string }
      | undefined;
    return Number(row?.n ?? 0);
  };
  return {
    async insert(row, tx) {
      await (tx ?? db)(passwordResets.name).insert(row);
    },
    async countSince({ emailKey, clientAddress, since }, tx) {
      const on = tx ?? db;
      return { byEmail: await count(on, "email_key", emailKey, since), byAddress: await count(on, "client_address", clientAddress, since) };
    },
    async endOpen(userId, at, tx) {
      await (tx ?? db)(passwordResets.name).where({ user_id: userId }).whereNull("used_at").whereNull("ended_at").update({ ended_at: at });
    },
    findUsable: (tokenHash, now, tx) => usable((tx ?? db)<PasswordResetRow>(passwordResets.name), tokenHash, now).first(),
    async spend(tokenHash, now, tx) {
      const on = tx ?? db;
      const spent = await usable(on(passwordResets.name), tokenHash, now).update({ used_at: now });
      if (spent !== 1) return undefined;
      return on<PasswordResetRow>(passwordResets.name).where({ token_hash: tokenHash }).first();
    },
    findById: (id, tx) => (tx ?? db)<PasswordResetRow>(passwordResets.name).where({ id }).first(),
  };
}
