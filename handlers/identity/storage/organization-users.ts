/**
 * The organization users store: an organization's relation to the deployment-wide accounts it has
 * (X-ID-UADM-*). An organization's users are the users of its applications (`application_users`)
 * and its admins; every query here is scoped by the organization, so no answer reaches an account
 * outside it. It also holds the organization's blocks (X-ID-UADM-3) and what ends or removes a
 * user's access to the organization's applications.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import {
  applications,
  applicationUsers,
  codes,
  consents,
  grants,
  organizationAdmins,
  organizationUserBlocks,
  type UserRow,
  users,
} from "./schema.ts";

/** A user as the organization sees them: the account, plus what is the organization's own. */
export interface OrganizationUserRow extends Omit<UserRow, "password_hash"> {
  /** The latest sign-in to one of the organization's applications. */
  last_sign_in_at: string | null;
  /** When an admin disabled the user for the organization; null while enabled. */
  disabled_at: string | null;
  /** 1 (or true) when the user administers the organization. */
  is_admin: boolean | number;
}

export interface OrganizationUserStore {
  /** One page of the organization's users, newest account first; `prefix` (lower-case) filters email, first and last name. */
  list(
    organizationId: string,
    q: { prefix?: string; offset: number; limit: number },
  ): Promise<{ rows: OrganizationUserRow[]; totalCount: number }>;
  /** The user, when they are one of the organization's users. */
  find(organizationId: string, userId: string, tx?: Tx): Promise<OrganizationUserRow | undefined>;
  /** The organization's applications each of `userIds` uses, by name. */
  applicationsOf(organizationId: string, userIds: string[]): Promise<{ user_id: string; id: string; name: string }[]>;
  /** The ids of the organization's applications the user uses (where their events go). */
  applicationIdsOf(organizationId: string, userId: string, tx?: Tx): Promise<string[]>;
  /** Disables the user for the organization; false when they were disabled already. */
  block(organizationId: string, userId: string, at: string, tx?: Tx): Promise<boolean>;
  /** Enables the user again; false when they were not disabled. */
  unblock(organizationId: string, userId: string, tx?: Tx): Promise<boolean>;
  /** Whether the user is disabled in the organization that owns the application. */
  blockedFrom(applicationId: string, userId: string, tx?: Tx): Promise<boolean>;
  /**
   * Ends the user's access to the organization's applications as of `at`: unused codes deleted,
   * grants revoked (their refresh and access tokens with them, X-ID-TOK-5). Codes first, so that
   * an exchange running at the same time either lost its code or made a grant this revokes.
   */
  endAccess(organizationId: string, userId: string, at: string, tx?: Tx): Promise<void>;
  /** Removes the user from the organization: consents, application links, admin role and block. */
  removeFromOrganization(organizationId: string, userId: string, tx?: Tx): Promise<void>;
  /** Whether any other organization has the account (uses one of its applications or administers it). */
  usedElsewhere(organizationId: string, userId: string, tx?: Tx): Promise<boolean>;
  /** Records a sign-in of the user to the application (a code issued), when they are its user. */
  recordSignIn(applicationId: string, userId: string, at: string, tx?: Tx): Promise<void>;
}

/** `%`, `_` and `\` match themselves in a LIKE prefix (ESCAPE '\'). */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export function knexOrganizationUsers(db: Knex): OrganizationUserStore {
  /** The organization's applications, as a subquery of ids. */
  const orgApps = (on: Knex | Tx, organizationId: string) => on(applications.name).where({ organization_id: organizationId }).select("id");

  /** The organization's users (users of its applications, or its admins), with what the organization knows of them. */
  function members(on: Knex | Tx, organizationId: string) {
    const lastSignIn = on(applicationUsers.name)
      .whereIn("application_id", orgApps(on, organizationId))
      .whereRaw("user_id = u.id")
      .max("last_sign_in_at");
    const admin = on(organizationAdmins.name).where({ organization_id: organizationId }).whereRaw("user_id = u.id").select(on.raw("1"));
    return on({ u: users.name })
      .leftJoin({ b: organizationUserBlocks.name }, (j) =>
        j.on("b.user_id", "u.id").andOn("b.organization_id", on.raw("?", [organizationId])),
      )
      .where((w) =>
        w
          .whereExists(on(applicationUsers.name).whereRaw("user_id = u.id").whereIn("application_id", orgApps(on, organizationId)))
          .orWhereExists(admin.clone()),
      )
      .select(
        "u.id",
        "u.email",
        "u.first_name",
        "u.last_name",
        "u.email_verified",
        "u.created_at",
        "u.updated_at",
        { last_sign_in_at: lastSignIn },
        { disabled_at: "b.created_at" },
        { is_admin: on.raw("CASE WHEN EXISTS ? THEN 1 ELSE 0 END", [admin.clone()]) },
      );
  }

  return {
    async list(organizationId, q) {
      const filtered = () => {
        const query = members(db, organizationId);
        if (q.prefix) {
          const pattern = likePrefix(q.prefix);
          query.where((w) =>
            w
              .whereRaw("u.email LIKE ? ESCAPE '\\'", [pattern])
              .orWhereRaw("LOWER(u.first_name) LIKE ? ESCAPE '\\'", [pattern])
              .orWhereRaw("LOWER(u.last_name) LIKE ? ESCAPE '\\'", [pattern]),
          );
        }
        return query;
      };
      const [counted] = (await db.from(filtered().as("m")).count({ n: "*" })) as { n: number | string }[];
      const rows = (await filtered()
        .orderBy([
          { column: "u.created_at", order: "desc" },
          { column: "u.id", order: "desc" },
        ])
        .offset(q.offset)
        .limit(q.limit)) as OrganizationUserRow[];
      return { rows, totalCount: Number(counted?.n ?? 0) };
    },

    find: async (organizationId, userId, tx) =>
      (await members(tx ?? db, organizationId)
        .where("u.id", userId)
        .first()) as OrganizationUserRow | undefined,

    async applicationsOf(organizationId, userIds) {
      if (!userIds.length) return [];
      return db({ au: applicationUsers.name })
        .join({ a: applications.name }, "a.id", "au.application_id")
        .where("a.organization_id", organizationId)
        .whereIn("au.user_id", userIds)
        .orderBy("a.name")
        .select("au.user_id", "a.id", "a.name");
    },

    applicationIdsOf: (organizationId, userId, tx) =>
      (tx ?? db)(applicationUsers.name)
        .where({ user_id: userId })
        .whereIn("application_id", orgApps(tx ?? db, organizationId))
        .pluck("application_id") as Promise<string[]>,

    async block(organizationId, userId, at, tx) {
      const inserted = await (tx ?? db)(organizationUserBlocks.name)
        .insert({ organization_id: organizationId, user_id: userId, created_at: at })
        .onConflict(["organization_id", "user_id"])
        .ignore()
        .returning("user_id");
      return inserted.length > 0;
    },

    unblock: async (organizationId, userId, tx) =>
      (await (tx ?? db)(organizationUserBlocks.name).where({ organization_id: organizationId, user_id: userId }).delete()) > 0,

    async blockedFrom(applicationId, userId, tx) {
      const on = tx ?? db;
      const row = await on({ b: organizationUserBlocks.name })
        .join({ a: applications.name }, "a.organization_id", "b.organization_id")
        .where({ "a.id": applicationId, "b.user_id": userId })
        .first("b.user_id");
      return row !== undefined;
    },

    async endAccess(organizationId, userId, at, tx) {
      const on = tx ?? db;
      await on(codes.name)
        .where({ user_id: userId })
        .whereNull("consumed_at")
        .whereIn("application_id", orgApps(on, organizationId))
        .delete();
      await on(grants.name)
        .where({ user_id: userId })
        .whereNull("revoked_at")
        .whereIn("application_id", orgApps(on, organizationId))
        .update({ revoked_at: at, ends_at: on.raw("CASE WHEN ends_at IS NOT NULL AND ends_at < ? THEN ends_at ELSE ? END", [at, at]) });
    },

    async removeFromOrganization(organizationId, userId, tx) {
      const on = tx ?? db;
      await on(consents.name).where({ user_id: userId }).whereIn("application_id", orgApps(on, organizationId)).delete();
      await on(applicationUsers.name).where({ user_id: userId }).whereIn("application_id", orgApps(on, organizationId)).delete();
      await on(organizationAdmins.name).where({ organization_id: organizationId, user_id: userId }).delete();
      await on(organizationUserBlocks.name).where({ organization_id: organizationId, user_id: userId }).delete();
    },

    async usedElsewhere(organizationId, userId, tx) {
      const on = tx ?? db;
      const app = await on({ au: applicationUsers.name })
        .join({ a: applications.name }, "a.id", "au.application_id")
        .where("au.user_id", userId)
        .whereNotNull("a.organization_id")
        .whereNot("a.organization_id", organizationId)
        .first("au.user_id");
      if (app) return true;
      const admin = await on(organizationAdmins.name)
        .where({ user_id: userId })
        .whereNot({ organization_id: organizationId })
        .first("user_id");
      return admin !== undefined;
    },

    async recordSignIn(applicationId, userId, at, tx) {
      await (tx ?? db)(applicationUsers.name).where({ application_id: applicationId, user_id: userId }).update({ last_sign_in_at: at });
    },
  };
}
