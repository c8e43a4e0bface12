/**
 * The authorization requests store: authorization requests waiting for the user (one per request
 * id, so several tabs can authorize at once), and the social sign-ins that continue them (the state
 * sent upstream, hashed, with its sealed PKCE verifier and nonce; single use).
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type RequestRow, requests, type SocialStateRow, socialStates } from "./schema.ts";

export interface AuthorizationRequestStore {
  insert(row: RequestRow): Promise<void>;
  /** The request, unless it expired at `now`. */
  find(id: string, now: string): Promise<RequestRow | undefined>;
  remove(id: string, tx?: Tx): Promise<void>;
  /** Deletes the requests expired at `now`. */
  removeExpired(now: string): Promise<void>;

  insertSocialState(row: SocialStateRow): Promise<void>;
  /** Takes the state (single use): returns it and deletes it, or undefined if unknown, already taken or expired. */
  takeSocialState(stateHash: string, now: string): Promise<SocialStateRow | undefined>;
}

export function knexAuthorizationRequests(db: Knex): AuthorizationRequestStore {
  return {
    async insert(row) {
      await db(requests.name).insert(row);
    },
    find: (id, now) => db<RequestRow>(requests.name).where({ id }).andWhere("expires_at", ">", now).first(),
    async remove(id, tx) {
      await (tx ?? db)(requests.name).where({ id }).delete();
    },
    async removeExpired(now) {
      await db(requests.name).where("expires_at", "<=", now).delete();
    },

    async insertSocialState(row) {
      await db(socialStates.name).insert(row);
    },
    takeSocialState: (stateHash, now) =>
      db.transaction(async (tx) => {
        const row = await tx<SocialStateRow>(socialStates.name).where({ state_hash: stateHash }).first();
        if (!row) return undefined;
        const deleted = await tx(socialStates.name).where({ state_hash: stateHash }).delete();
        return deleted === 1 && row.expires_at > now ? row : undefined;
      }),
  };
}
