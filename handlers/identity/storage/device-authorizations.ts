/**
 * The device authorizations store (X-ID-DEV-1..6): one row per device authorization, found by the
 * hash of either code, and the wrong user codes typed on the verification page (X-ID-DEV-4).
 * Every change of state is one conditional UPDATE whose row count decides (ADR 0002): a code is
 * decided once, and redeemed once, whatever runs concurrently.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import {
  type DeviceAuthorizationRow,
  deviceAuthorizations,
  deviceCodeGuesses,
  type GrantRow,
  grants,
  type RefreshRow,
  refreshTokens,
} from "./schema.ts";

export interface DeviceDecision {
  status: "approved" | "denied";
  userId: string;
  authTime: string;
  amr: string;
  at: string;
}

export interface DeviceAuthorizationStore {
  insert(row: DeviceAuthorizationRow, tx?: Tx): Promise<void>;
  findByUserCodeHash(hash: string, tx?: Tx): Promise<DeviceAuthorizationRow | undefined>;
  findByDeviceCodeHash(hash: string, tx?: Tx): Promise<DeviceAuthorizationRow | undefined>;
  /** Decides a pending, unexpired authorization at `decision.at`; false when it was decided or expired already. */
  decide(id: string, decision: DeviceDecision, tx?: Tx): Promise<boolean>;
  /**
   * Records a poll at `now`, `row` being the authorization as read before. When the last poll was
   * less than the interval before `now`, or a concurrent poll recorded itself first, the interval
   * grows by `slowDownSeconds` and the answer is `slow_down` (RFC 8628 §3.5).
   */
  poll(row: DeviceAuthorizationRow, now: string, nowMs: number, slowDownSeconds: number): Promise<"ok" | "slow_down">;
  /**
   * Marks an approved authorization redeemed (one conditional UPDATE) and stores its grant and
   * refresh token in the caller's transaction; false when a concurrent poll redeemed it first.
   */
  redeem(o: { id: string; grant: GrantRow; refresh: RefreshRow | undefined }, tx: Tx): Promise<boolean>;
  /** Records a wrong user code for each subject (`user:<id>`, `address:<bucket>`). */
  recordGuess(subjects: string[], at: string): Promise<void>;
  /** Wrong user codes of `subject` since `since`. */
  countGuesses(subject: string, since: string): Promise<number>;
}

export function knexDeviceAuthorizations(db: Knex): DeviceAuthorizationStore {
  const table = deviceAuthorizations.name;
  return {
    async insert(row, tx) {
      await (tx ?? db)(table).insert(row);
    },
    async findByUserCodeHash(hash, tx) {
      return (await (tx ?? db)(table).where({ user_code_hash: hash }).first(deviceAuthorizations.columns)) as
        | DeviceAuthorizationRow
        | undefined;
    },
    async findByDeviceCodeHash(hash, tx) {
      return (await (tx ?? db)(table).where({ device_code_hash: hash }).first(deviceAuthorizations.columns)) as
        | DeviceAuthorizationRow
        | undefined;
    },
    async decide(id, d, tx) {
      const n = await (tx ?? db)(table)
        .where({ id, status: "pending" })
        .andWhere("expires_at", ">", d.at)
        .update({ status: d.status, user_id: d.userId, auth_time: d.authTime, amr: d.amr, decided_at: d.at });
      return n === 1;
    },
    async poll(row, now, nowMs, slowDownSeconds) {
      const last = row.last_polled_at ? Date.parse(row.last_polled_at) : undefined;
      const early = last !== undefined && nowMs - last < row.interval_seconds * 1000;
      if (!early) {
        // Compare-and-set on the poll that was read: of concurrent polls in time, one records
        // itself; the others find the poll moved and are too early by that very poll.
        const moved = db(table).where({ id: row.id });
        const n = await (row.last_polled_at === null
          ? moved.whereNull("last_polled_at")
          : moved.andWhere({ last_polled_at: row.last_polled_at })
        ).update({ last_polled_at: now });
        if (n === 1) return "ok";
      }
      // The interval only grows, by one step per early poll (an increment, never a read value
      // written back): a slow_down is remembered for every later poll of this code.
      await db(table)
        .where({ id: row.id })
        .update({ last_polled_at: now, interval_seconds: db.raw("interval_seconds + ?", [slowDownSeconds]) });
      return "slow_down";
    },
    async redeem({ id, grant, refresh }, tx) {
      // The conditional UPDATE first: the caller whose row count is 1 is the one that stores.
      const n = await tx(table).where({ id, status: "approved" }).update({ status: "redeemed" });
      if (n !== 1) return false;
      await tx(grants.name).insert(grant);
      if (refresh) await tx(refreshTokens.name).insert(refresh);
      return true;
    },
    async recordGuess(subjects, at) {
      await db(deviceCodeGuesses.name).insert(subjects.map((subject) => ({ subject, at })));
    },
    async countGuesses(subject, since) {
      const row = (await db(deviceCodeGuesses.name).where({ subject }).andWhere("at", ">", since).count({ n: "*" }).first()) as
        | { n: number | string }
        | undefined;
      return Number(row?.n ?? 0);
    },
  };
}
