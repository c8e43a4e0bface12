/**
 * The applications store: OAuth clients (applications), their client secrets, the index of the
 * browser origins they accept (X-ID-CORS-2) and who uses each (application_users). The interface
 * and its portable knex implementation; sqlite/applications.ts and postgres/applications.ts
 * replace client authentication's read with a prepared statement, and storage/index.ts picks one.
 */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type ApplicationRow, applicationOrigins, applications, applicationUsers, type ClientSecretRow, clientSecrets } from "./schema.ts";

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
  /** Sign-in needs a verified email address (X-ID-EVF-5). */
  requireVerifiedEmail: boolean;
  /** Authorization requests must be pushed (X-ID-PAR-5). */
  requirePushedAuthorizationRequests: boolean;
  /** Its own second-factor policy (X-ID-MFA-9); null: its organization's (`organization` in the API). */
  secondFactor: "optional" | "required" | null;
  /** May use the `client_credentials` grant (X-ID-CC-1). */
  clientCredentialsEnabled: boolean;
  /** The scopes that grant may ask for (X-ID-CC-2). */
  clientCredentialsScopes: string[];
  /** The resource URIs (RFC 8707) it may ask access tokens for (X-ID-CC-3). */
  resources: string[];
  /** Its one client authentication method (X-ID-CC-5); null: either client secret method. */
  tokenEndpointAuthMethod: TokenEndpointAuthMethod | null;
  /** Its public keys for private_key_jwt (X-ID-CC-6), or null. */
  jwks: { keys: Record<string, unknown>[] } | null;
  /** Where its public keys are published, instead of `jwks` (X-ID-CC-6), or null. */
  jwksUri: string | null;
  /** Scopes beyond the OpenID four it may ask for with a resource (X-ID-RES-2). */
  apiScopes: string[];
  /** Where the end-session endpoint may send the browser after logout (X-ID-LOGOUT-3), exact strings. */
  postLogoutRedirectUris: string[];
  /** May use the device authorization grant (X-ID-DEV-8). */
  deviceAuthorization: boolean;
  /** Where logout tokens go (X-ID-LOGOUT-7); null: none. */
  backchannelLogoutUri: string | null;
  /** The application needs `sid` in its logout tokens (X-ID-LOGOUT-7). */
  backchannelLogoutSessionRequired: boolean;
  /** X-ID-DPOP-8: the token endpoint refuses its requests without a DPoP proof. */
  dpopBoundAccessTokens: boolean;
}

export const TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];
const authMethodOf = (v: string | null | undefined): TokenEndpointAuthMethod | null =>
  (TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(v ?? "") ? (v as TokenEndpointAuthMethod) : null;

/** What client authentication reads: the application and the hashes of its secrets still accepted. */
export interface Client {
  application: Application;
  secretHashes: string[];
}

export interface ApplicationStore {
  findById(id: string, tx?: Tx): Promise<Application | undefined>;
  findByClientId(clientId: string, tx?: Tx): Promise<Application | undefined>;
  /** One page of the organization's applications, newest first, and how many it has. */
  list(organizationId: string, page: number, pageSize: number): Promise<{ items: Application[]; totalCount: number }>;
  insert(row: ApplicationRow, tx?: Tx): Promise<void>;
  /** Inserts `row` unless an application has its client id already (concurrent starts of several instances). */
  insertIfAbsent(row: ApplicationRow, tx?: Tx): Promise<void>;
  update(id: string, patch: Partial<ApplicationRow>, tx?: Tx): Promise<void>;
  remove(id: string, tx?: Tx): Promise<void>;
  /**
   * The index of browser origins (X-ID-CORS-2): the application's origins, replaced whenever its
   * redirect URIs or allowed origins change, in the same transaction.
   */
  replaceOrigins(applicationId: string, origins: readonly string[], tx?: Tx): Promise<void>;
  /**
   * Whether an enabled application (a public one, with `publicOnly`) lets pages of `origin` use
   * it: what a CORS preflight is answered by. One indexed lookup, however many applications.
   */
  anyAcceptsOrigin(origin: string, publicOnly: boolean): Promise<boolean>;

  /** Client authentication's one read: the application by client id and its secrets accepted at `now`. */
  findClient(clientId: string, now: string): Promise<Client | undefined>;
  insertSecret(row: ClientSecretRow, tx?: Tx): Promise<void>;
  /**
   * Retires every secret of the application still valid after `expiresAt` (now, for no overlap):
   * the current one and any earlier one whose own overlap would outlast the new one.
   */
  retireSecrets(applicationId: string, expiresAt: string, tx?: Tx): Promise<void>;
  /** Secrets whose overlap ended before `before`: never accepted again, so no need to keep their hashes. */
  purgeExpiredSecrets(applicationId: string, before: string, tx?: Tx): Promise<void>;

  /** Records that the user uses the application (registered through it or authorized it); again is a no-op. */
  addUser(applicationId: string, userId: string, at: string, tx?: Tx): Promise<void>;
  /** The applications the user uses. */
  ofUser(userId: string, tx?: Tx): Promise<string[]>;
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
  requireVerifiedEmail: Boolean(r.require_verified_email),
  requirePushedAuthorizationRequests: Boolean(r.require_pushed_authorization_requests),
  secondFactor: r.mfa_policy === "optional" || r.mfa_policy === "required" ? r.mfa_policy : null,
  clientCredentialsEnabled: Boolean(r.client_credentials_enabled),
  clientCredentialsScopes: r.client_credentials_scopes ? JSON.parse(r.client_credentials_scopes) : [],
  resources: r.resources ? JSON.parse(r.resources) : [],
  tokenEndpointAuthMethod: authMethodOf(r.token_endpoint_auth_method),
  jwks: r.jwks ? JSON.parse(r.jwks) : null,
  jwksUri: r.jwks_uri ?? null,
  apiScopes: r.api_scopes ? JSON.parse(r.api_scopes) : [],
  postLogoutRedirectUris: r.post_logout_redirect_uris ? JSON.parse(r.post_logout_redirect_uris) : [],
  deviceAuthorization: Boolean(r.device_authorization),
  backchannelLogoutUri: r.backchannel_logout_uri ?? null,
  backchannelLogoutSessionRequired: Boolean(r.backchannel_logout_session_required),
  dpopBoundAccessTokens: Boolean(r.dpop_bound_access_tokens),
});

/**
 * Client authentication's read as one statement: one row per secret still accepted (or one row
 * with a NULL hash for none), a LEFT JOIN on indexed columns, cheaper than aggregating the hashes
 * in a subquery. `now` and `clientId` are the parameters, in that order. Its columns are named
 * (never `a.*`: a prepared `*` breaks on PostgreSQL when a migration adds a column under a
 * running instance).
 */
export const clientSql = (now: string, clientId: string) =>
  `SELECT ${applications.list("a")}, s.secret_hash AS active_secret_hash FROM ${applications.name} a ` +
  `LEFT JOIN ${clientSecrets.name} s ON s.application_id = a.id AND (s.expires_at IS NULL OR s.expires_at > ${now}) ` +
  `WHERE a.client_id = ${clientId}`;

/** The client out of the statement's rows. */
export function clientOf(rows: Record<string, unknown>[]): Client | undefined {
  if (!rows.length) return undefined;
  const secretHashes = rows.map((r) => r.active_secret_hash).filter((h): h is string => typeof h === "string");
  return { application: parseApplication(applications.read(rows[0]!)), secretHashes };
}

export function knexApplications(db: Knex): ApplicationStore {
  const parsed = (row: ApplicationRow | undefined) => (row ? parseApplication(row) : undefined);
  return {
    findById: async (id, tx) => parsed(await (tx ?? db)<ApplicationRow>(applications.name).where({ id }).first()),
    findByClientId: async (clientId, tx) =>
      parsed(await (tx ?? db)<ApplicationRow>(applications.name).where({ client_id: clientId }).first()),
    async list(organizationId, page, pageSize) {
      const q = db<ApplicationRow>(applications.name).where({ organization_id: organizationId });
      const { items, totalCount } = await pageNewestFirst<ApplicationRow>(q, page, pageSize);
      return { items: items.map(parseApplication), totalCount };
    },
    async insert(row, tx) {
      await (tx ?? db)(applications.name).insert(row);
    },
    async insertIfAbsent(row, tx) {
      await (tx ?? db)(applications.name).insert(row).onConflict("client_id").ignore();
    },
    async update(id, patch, tx) {
      await (tx ?? db)(applications.name).where({ id }).update(patch);
    },
    async remove(id, tx) {
      await (tx ?? db)(applications.name).where({ id }).delete();
    },
    async replaceOrigins(applicationId, origins, tx) {
      const on = tx ?? db;
      await on(applicationOrigins.name).where({ application_id: applicationId }).delete();
      if (origins.length) await on(applicationOrigins.name).insert(origins.map((origin) => ({ origin, application_id: applicationId })));
    },
    async anyAcceptsOrigin(origin, publicOnly) {
      const rows = (await db(`${applicationOrigins.name} as o`)
        .join(`${applications.name} as a`, "a.id", "o.application_id")
        .where("o.origin", origin)
        .select("a.enabled", "a.client_type")) as Array<{ enabled: boolean | number; client_type: string }>;
      return rows.some((r) => Boolean(r.enabled) && (!publicOnly || r.client_type === "public"));
    },

    findClient: async (clientId, now) => {
      const result = (await db.raw(clientSql("?", "?"), [now, clientId])) as
        | { rows?: Record<string, unknown>[] }
        | Record<string, unknown>[];
      return clientOf(Array.isArray(result) ? result : (result.rows ?? []));
    },
    async insertSecret(row, tx) {
      await (tx ?? db)(clientSecrets.name).insert(row);
    },
    async retireSecrets(applicationId, expiresAt, tx) {
      await (tx ?? db)(clientSecrets.name)
        .where({ application_id: applicationId })
        .andWhere((q) => q.whereNull("expires_at").orWhere("expires_at", ">", expiresAt))
        .update({ expires_at: expiresAt });
    },
    async purgeExpiredSecrets(applicationId, before, tx) {
      await (tx ?? db)(clientSecrets.name)
        .where({ application_id: applicationId })
        .whereNotNull("expires_at")
        .andWhere("expires_at", "<=", before)
        .delete();
    },

    async addUser(applicationId, userId, at, tx) {
      await (tx ?? db)(applicationUsers.name)
        .insert({ application_id: applicationId, user_id: userId, created_at: at })
        .onConflict(["application_id", "user_id"])
        .ignore();
    },
    ofUser: (userId, tx) => (tx ?? db)(applicationUsers.name).where({ user_id: userId }).pluck("application_id") as Promise<string[]>,
  };
}
