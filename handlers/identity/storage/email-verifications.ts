/**
 * The email verification store (X-ID-EVF-1..4): the mailed links that prove an address, kept by
 * the storage key of their token. A link is used at most once: `consume` is one conditional
 * update, so of two concurrent uses exactly one wins.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type EmailVerificationRow, emailVerifications } from "./schema.ts";

export interface EmailVerificationStore {
  insert(row: EmailVerificationRow, tx?: Tx): Promise<void>;
  /**
   * Marks the link used at `now` if it is unused and unexpired; the row as it was when this call
   * won, else undefined (unknown, used, superseded or expired).
   */
  consume(tokenHash: string, now: string, tx: Tx): Promise<EmailVerificationRow | undefined>;
  /** Ends the user's unused links of `purpose` (a newer email change supersedes the older ones). */
  supersede(userId: string, purpose: EmailVerificationRow["purpose"], now: string, tx?: Tx): Promise<void>;
  /** The user's newest unused, unexpired link of `purpose`. */
  newestLive(userId: string, purpose: EmailVerificationRow["purpose"], now: string, tx?: Tx): Promise<EmailVerificationRow | undefined>;
  /** How many links were made for this user and address after `since`, and the oldest one's time (for Retry-After). */
  sentSince(
    userId: string,
    email: string,
    since: string,
    tx?: Tx,
  ): Promise<{ count: number; oldest: string | undefined; newest: string | undefined }>;
}

export function knexEmailVerifications(db: Knex): EmailVerificationStore {
  return {
    async insert(row, tx) {
      await (tx ?? db)(emailVerifications.name).insert(row);
    },
    async consume(tokenHash, now, tx) {
      const row = await tx<EmailVerificationRow>(emailVerifications.name).where({ token_hash: tokenHash }).first();
      if (!row) return undefined;
      // The conditional update decides: a concurrent use of the same link updates nothing here.
      const won = await tx(emailVerifications.name)
        .where({ token_hash: tokenHash })
        .whereNull("consumed_at")
        .andWhere("expires_at", ">", now)
        .update({ consumed_at: now });
      return won === 1 ? row : undefined;
    },
    async supersede(userId, purpose, now, tx) {
      await (tx ?? db)(emailVerifications.name).where({ user_id: userId, purpose }).whereNull("consumed_at").update({ consumed_at: now });
    },
    newestLive: (userId, purpose, now, tx) =>
      (tx ?? db)<EmailVerificationRow>(emailVerifications.name)
        .where({ user_id: userId, purpose })
        .whereNull("consumed_at")
        .andWhere("expires_at", ">", now)
        .orderBy("created_at", "desc")
        .first(),
    async sentSince(userId, email, since, tx) {
      const row = (await (tx ?? db)(emailVerifications.name)
        .where({ user_id: userId, email })
        .andWhere("created_at", ">", since)
        .count({ n: "*" })
        .min({ oldest: "created_at" })
        .max({ newest: "created_at" })
        .first()) as { n: number | string; oldest: string | null; newest: string | null } | undefined;
      return { count: Number(row?.n ?? 0), oldest: row?.oldest ?? undefined, newest: row?.newest ?? undefined };
    },
  };
}
