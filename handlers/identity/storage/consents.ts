/** The consents store: the scopes each user has granted each application (X-ID-AZ-2). */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type ConsentRow, consents } from "./schema.ts";

export interface ConsentStore {
  find(userId: string, applicationId: string): Promise<Pick<ConsentRow, "scopes"> | undefined>;
  /** Replaces the user's consent to the application with `scopes` (JSON). */
  save(userId: string, applicationId: string, scopes: string[], at: string, tx?: Tx): Promise<void>;
}

export function knexConsents(db: Knex): ConsentStore {
  return {
    find: (userId, applicationId) =>
      db<ConsentRow>(consents.name).where({ user_id: userId, application_id: applicationId }).first("scopes"),
    async save(userId, applicationId, scopes, at, tx) {
      await (tx ?? db)(consents.name)
        .insert({ user_id: userId, application_id: applicationId, scopes: JSON.stringify(scopes), updated_at: at })
        .onConflict(["user_id", "application_id"])
        .merge(["scopes", "updated_at"]);
    },
  };
}
