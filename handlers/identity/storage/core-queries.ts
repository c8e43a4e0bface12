/** Named queries over the core tables: organizations, admins, users, applications, client secrets. */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { transactor } from "../../../server/storage/transaction.ts";
import type { ApplicationRow, ClientSecretRow, OrganizationRow, UserRow } from "./schema.ts";

export type Database = Knex | Knex.Transaction;

export type { ApplicationRow, ClientSecretRow, OrganizationRow, UserRow };

/** An application with its JSON columns parsed. */
export interface Application {
  id: string;
  organizationId: string | null;
  name: string;
  clientId: string;
  clientType: "public" | "confidential";
  redirectUris: string[];
  allowedScopes: string[];
  enabledProviders: string[];
  branding: { logoUrl?: string; primaryColor?: string; secondaryColor?: string };
  firstParty: boolean;
  createdAt: string;
  updatedAt: string;
  /** False while disabled: its client id is refused like an unknown one (X-ID-TOK-5). */
  enabled: boolean;
  /** When it was last disabled (ISO 8601 UTC): every grant, code and pending request made before is ended. */
  tokensNotBefore: string | null;
  /** Origins whose pages may use it (X-ID-CORS-2); null: the origins of its redirect URIs. */
  allowedOrigins: string[] | null;
}

export const parseApplication = (r: ApplicationRow): Application => ({
  id: r.id,
  organizationId: r.organization_id,
  name: r.name,
  clientId: r.client_id,
  clientType: r.client_type,
  redirectUris: JSON.parse(r.redirect_uris),
  allowedScopes: JSON.parse(r.allowed_scopes),
  enabledProviders: JSON.parse(r.enabled_providers),
  branding: JSON.parse(r.branding),
  firstParty: Boolean(r.first_party),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  enabled: r.enabled === undefined ? true : Boolean(r.enabled),
  tokensNotBefore: r.tokens_not_before ?? null,
  allowedOrigins: r.allowed_origins ? JSON.parse(r.allowed_origins) : null,
});

export function createCoreQueries(db: Knex) {
  return {
    db,
    /** One transaction over these tables (and any other of the service's storage functions). */
    transaction: transactor(db),
    findOrganization: (id: string, trx: Database = db) => trx<OrganizationRow>("organizations").where({ id }).first(),
    insertOrganization: (row: OrganizationRow, trx: Database = db) => trx("organizations").insert(row),
    addAdmin: (organizationId: string, userId: string, at: string, trx: Database = db) =>
      trx("organization_admins")
        .insert({ organization_id: organizationId, user_id: userId, created_at: at })
        .onConflict(["organization_id", "user_id"])
        .ignore(),
    /** The organizations a user administers (normally one). */
    adminOrganizations: (userId: string, trx: Database = db) =>
      trx("organization_admins").where({ user_id: userId }).orderBy("created_at").pluck("organization_id") as Promise<string[]>,

    findUserById: (id: string, trx: Database = db) => trx<UserRow>("users").where({ id }).first(),
    findUserByEmail: (email: string, trx: Database = db) => trx<UserRow>("users").where({ email: email.toLowerCase() }).first(),
    insertUser: (row: UserRow, trx: Database = db) => trx("users").insert({ ...row, email: row.email.toLowerCase() }),
    updateUser: (id: string, patch: Partial<UserRow>, trx: Database = db) => trx("users").where({ id }).update(patch),
    deleteUser: (id: string, trx: Database = db) => trx("users").where({ id }).delete(),

    findApplicationById: async (id: string, trx: Database = db) => {
      const row = await trx<ApplicationRow>("applications").where({ id }).first();
      return row ? parseApplication(row) : undefined;
    },
    findApplicationByClientId: async (clientId: string, trx: Database = db) => {
      const row = await trx<ApplicationRow>("applications").where({ client_id: clientId }).first();
      return row ? parseApplication(row) : undefined;
    },
    listApplications: async (organizationId: string, page: number, pageSize: number, trx: Database = db) => {
      const q = trx<ApplicationRow>("applications").where({ organization_id: organizationId });
      const { items, totalCount } = await pageNewestFirst<ApplicationRow>(q, page, pageSize);
      return { items: items.map(parseApplication), totalCount };
    },
    insertApplication: (row: ApplicationRow, trx: Database = db) => trx("applications").insert(row),
    /** Inserts `row` unless an application has its client id already (concurrent starts of several instances). */
    insertApplicationIfAbsent: (row: ApplicationRow, trx: Database = db) =>
      trx("applications").insert(row).onConflict("client_id").ignore(),
    updateApplication: (id: string, patch: Partial<ApplicationRow>, trx: Database = db) => trx("applications").where({ id }).update(patch),
    deleteApplication: (id: string, trx: Database = db) => trx("applications").where({ id }).delete(),
    /**
     * The index of browser origins (X-ID-CORS-2): the application's origins, replaced whenever its
     * redirect URIs or allowed origins change, in the same transaction.
     */
    replaceApplicationOrigins: async (applicationId: string, origins: readonly string[], trx: Database = db) => {
      await trx("application_origins").where({ application_id: applicationId }).delete();
      if (origins.length) await trx("application_origins").insert(origins.map((origin) => ({ origin, application_id: applicationId })));
    },
    /**
     * Whether an enabled application (a public one, with `publicOnly`) lets pages of `origin` use
     * it: what a CORS preflight is answered by. One indexed lookup, however many applications.
     */
    anyApplicationAcceptsOrigin: async (origin: string, publicOnly: boolean, trx: Database = db) => {
      const rows = (await trx("application_origins as o")
        .join("applications as a", "a.id", "o.application_id")
        .where("o.origin", origin)
        .select("a.enabled", "a.client_type")) as Array<{ enabled: boolean | number; client_type: string }>;
      return rows.some((r) => Boolean(r.enabled) && (!publicOnly || r.client_type === "public"));
    },

    /** Secrets still accepted at `now`: the current one and any retired one inside its overlap. */
    activeClientSecrets: (applicationId: string, now: string, trx: Database = db) =>
      trx<ClientSecretRow>("client_secrets")
        .where({ application_id: applicationId })
        .andWhere((q) => q.whereNull("expires_at").orWhere("expires_at", ">", now)),
    insertClientSecret: (row: ClientSecretRow, trx: Database = db) => trx("client_secrets").insert(row),
    /**
     * Retires every secret of the application still valid after `expiresAt` (now, for no overlap):
     * the current one and any earlier one whose own overlap would outlast the new one.
     */
    retireClientSecrets: (applicationId: string, expiresAt: string, trx: Database = db) =>
      trx("client_secrets")
        .where({ application_id: applicationId })
        .andWhere((q) => q.whereNull("expires_at").orWhere("expires_at", ">", expiresAt))
        .update({ expires_at: expiresAt }),
    /** Secrets whose overlap ended before `before`: never accepted again, so no need to keep their hashes. */
    purgeExpiredClientSecrets: (applicationId: string, before: string, trx: Database = db) =>
      trx("client_secrets")
        .where({ application_id: applicationId })
        .whereNotNull("expires_at")
        .andWhere("expires_at", "<=", before)
        .delete(),

    addApplicationUser: (applicationId: string, userId: string, at: string, trx: Database = db) =>
      trx("application_users")
        .insert({ application_id: applicationId, user_id: userId, created_at: at })
        .onConflict(["application_id", "user_id"])
        .ignore(),
    applicationsOfUser: (userId: string, trx: Database = db) =>
      trx("application_users").where({ user_id: userId }).pluck("application_id") as Promise<string[]>,

    findIdentity: (provider: string, subject: string, trx: Database = db) =>
      trx("user_identities").where({ provider, subject }).first() as Promise<{ user_id: string } | undefined>,
    linkIdentity: (provider: string, subject: string, userId: string, at: string, trx: Database = db) =>
      trx("user_identities").insert({ provider, subject, user_id: userId, created_at: at }).onConflict(["provider", "subject"]).ignore(),

    recordRegistrationAttempt: (address: string, at: string, trx: Database = db) => trx("registration_attempts").insert({ address, at }),
    /** Registration attempts from `address` since `since`, with the oldest one's time (for Retry-After). */
    registrationAttemptsSince: async (address: string, since: string, trx: Database = db) => {
      const row = (await trx("registration_attempts")
        .where({ address })
        .andWhere("at", ">", since)
        .count({ n: "*" })
        .min({ oldest: "at" })
        .first()) as { n: number | string; oldest: string | null } | undefined;
      return { count: Number(row?.n ?? 0), oldest: row?.oldest ?? undefined };
    },
    pruneRegistrationAttempts: (before: string, trx: Database = db) => trx("registration_attempts").where("at", "<=", before).delete(),
  };
}

export type CoreQueries = ReturnType<typeof createCoreQueries>;
