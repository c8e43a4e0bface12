/** The organizations store: organizations and their admins (the users who administer each). */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type OrganizationRow, organizationAdmins, organizations, organizationUserBlocks } from "./schema.ts";

export interface OrganizationStore {
  find(id: string, tx?: Tx): Promise<OrganizationRow | undefined>;
  insert(row: OrganizationRow, tx?: Tx): Promise<void>;
  /** Makes the user an admin of the organization; again is a no-op. */
  addAdmin(organizationId: string, userId: string, at: string, tx?: Tx): Promise<void>;
  /** The organizations a user administers (normally one), oldest first; not those that disabled them. */
  administeredBy(userId: string, tx?: Tx): Promise<string[]>;
}

export function knexOrganizations(db: Knex): OrganizationStore {
  return {
    find: (id, tx) => (tx ?? db)<OrganizationRow>(organizations.name).where({ id }).first(),
    async insert(row, tx) {
      await (tx ?? db)(organizations.name).insert(row);
    },
    async addAdmin(organizationId, userId, at, tx) {
      await (tx ?? db)(organizationAdmins.name)
        .insert({ organization_id: organizationId, user_id: userId, created_at: at })
        .onConflict(["organization_id", "user_id"])
        .ignore();
    },
    // An admin disabled in their organization administers it no more (X-ID-UADM-3).
    administeredBy: (userId, tx) =>
      (tx ?? db)({ oa: organizationAdmins.name })
        .where("oa.user_id", userId)
        .whereNotExists((tx ?? db)(organizationUserBlocks.name).whereRaw("organization_id = oa.organization_id").where({ user_id: userId }))
        .orderBy("oa.created_at")
        .pluck("oa.organization_id") as Promise<string[]>,
  };
}
