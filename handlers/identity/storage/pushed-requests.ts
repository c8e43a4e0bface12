/**
 * The pushed authorization requests store (RFC 9126): the parameters each client pushed, keyed
 * by the hash of the `request_uri` it was given. Taking one is a conditional update, so of
 * concurrent uses exactly one gets the parameters (single use, X-ID-PAR-3).
 */
import type { Knex } from "knex";
import { type PushedRequestRow, pushedRequests } from "./schema.ts";

export interface PushedRequestStore {
  insert(row: PushedRequestRow): Promise<void>;
  /**
   * Marks the request used and returns its parameters (the JSON text), or undefined when no
   * unused, unexpired request of that application has that hash. Exactly one caller wins.
   */
  take(requestUriHash: string, applicationId: string, now: string): Promise<string | undefined>;
}

export function knexPushedRequests(db: Knex): PushedRequestStore {
  return {
    async insert(row) {
      await db(pushedRequests.name).insert(row);
    },
    take: (requestUriHash, applicationId, now) =>
      db.transaction(async (tx) => {
        // The conditional update decides the winner; only the winner reads the parameters.
        const updated = await tx(pushedRequests.name)
          .where({ request_uri_hash: requestUriHash, application_id: applicationId })
          .whereNull("consumed_at")
          .andWhere("expires_at", ">", now)
          .update({ consumed_at: now });
        if (updated !== 1) return undefined;
        const row = await tx<PushedRequestRow>(pushedRequests.name).where({ request_uri_hash: requestUriHash }).first("parameters");
        return row?.parameters;
      }),
  };
}
