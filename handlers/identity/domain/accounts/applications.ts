/**
 * Applications (OAuth clients, ID-APP-1) of an organization and their client secrets (X-ID-APP-2).
 * Every admin operation goes through `owned`: another organization's application (or the built-in
 * dashboard client) is 403, an unknown id 404.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { conflict, forbidden, invalid, notFound } from "../../../../server/domain/errors.ts";
import type { Application } from "../../storage/applications.ts";
import type { ApplicationRow } from "../../storage/schema.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import type { AdminAction, AuditEventType } from "../audit.ts";
import type { IdentityContext } from "../context.ts";
import { browserOrigins } from "../oauth/browser-origins.ts";
import { clientSecretHmacKey, hashClientSecret, newClientSecret, secretMatchesAny } from "./client-secrets.ts";
import type { Providers } from "./providers.ts";
import { checkSettings } from "./validation.ts";
import { type ClientAuthSettings, checkClientAuthSettings, clientAuthColumns, currentClientAuthSettings } from "./client-auth-settings.ts";

export type Branding = Application["branding"];
export type ClientType = Application["clientType"];

export interface ApplicationInput extends ClientAuthSettings {
  name: string;
  clientType: ClientType;
  redirectUris: string[];
  allowedScopes?: string[];
  enabledProviders?: string[];
  branding?: Branding;
  /** Origins whose pages may use it (X-ID-CORS-2); absent or null: the origins of its redirect URIs. */
  allowedOrigins?: string[] | null;
  /** Sign-in needs a verified email address (X-ID-EVF-5); absent: false. */
  requireVerifiedEmail?: boolean;
  /** Authorization requests must be pushed (X-ID-PAR-5); absent: false. */
  requirePushedAuthorizationRequests?: boolean;
  /** Its own second-factor policy (X-ID-MFA-9); absent or `organization`: its organization's. */
  secondFactor?: "optional" | "required" | "organization";
  /** Scopes beyond the OpenID four it may ask for with a resource (X-ID-RES-2); absent: none. */
  apiScopes?: string[];
  /** Where RP-Initiated Logout may send the browser back to (X-ID-LOGOUT-3); absent: none. */
  postLogoutRedirectUris?: string[];
  /** May use the device authorization grant (X-ID-DEV-8); absent: false. */
  deviceAuthorization?: boolean;
  /** Where logout tokens are POSTed when a session that signed in here ends (X-ID-LOGOUT-7); null or absent: none. */
  backchannelLogoutUri?: string | null;
  /** The application needs `sid` in its logout tokens (X-ID-LOGOUT-7); default false. */
  backchannelLogoutSessionRequired?: boolean;
  /** Every token request must carry a DPoP proof (X-ID-DPOP-8); default false. */
  dpopBoundAccessTokens?: boolean;
}

export type ApplicationPatch = Partial<Omit<ApplicationInput, "clientType">> & {
  /** false disables the application, ending every token issued to it for good; true enables it again (X-ID-TOK-5). */
  enabled?: boolean;
};

/** The client credentials and client authentication fields of an input (X-ID-CC-1..6). */
const clientAuthOf = (i: ClientAuthSettings): ClientAuthSettings => ({
  clientCredentials: i.clientCredentials,
  resources: i.resources,
  tokenEndpointAuthMethod: i.tokenEndpointAuthMethod,
  jwks: i.jwks,
  jwksUri: i.jwksUri,
});

/** The policy column of an application: its own setting, or null where it follows its organization's (X-ID-MFA-9). */
const ownPolicy = (setting: ApplicationInput["secondFactor"]) => (setting === "optional" || setting === "required" ? setting : null);

/** Default allowed scopes of a new application (spec: `openid profile email`). */
export const DEFAULT_SCOPES = ["openid", "profile", "email"];
/** Longest overlap a regeneration may ask for (spec: 0-86400 s). */
export const MAX_SECRET_OVERLAP_SECONDS = 86_400;

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `<slug of the name>-<16 random alphanumerics>` (~95 bits): readable in logs, unguessable enough to not be an index. */
export function newClientId(name: string): string {
  const slug =
    name
      .normalize("NFKD")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40)
      .replace(/-+$/, "") || "app";
  const bytes = randomBytes(16);
  let suffix = "";
  // 256 % 62 leaves a slight bias: harmless for an identifier, which is public and not a secret.
  for (const b of bytes) suffix += ALPHANUMERIC[b % ALPHANUMERIC.length];
  return `${slug}-${suffix}`;
}

export function createApplications(ctx: IdentityContext, providers: Providers) {
  const { clock, audit } = ctx;
  const { transaction, applications } = ctx.storage;
  const clientSecretKey = clientSecretHmacKey(ctx.clientSecretKey);
  const isConfigured = (id: string) => providers.findProvider(id) !== undefined;

  /** Records an admin's change of an application in the change's transaction (X-ID-AUD-1, X-ID-AUD-2). */
  const recordChange = (
    trx: Tx,
    by: AdminAction | undefined,
    type: AuditEventType,
    app: { id: string; organizationId: string | null },
    details = {},
  ) =>
    audit.record(trx, {
      type,
      actor: { type: "admin", id: by?.adminId },
      organizationId: app.organizationId ?? undefined,
      applicationId: app.id,
      origin: by?.origin,
      details,
    });

  /** The application when it belongs to this organization; 404 unknown, 403 someone else's (or built-in). */
  async function owned(organizationId: string, applicationId: string): Promise<Application> {
    const app = await applications.findById(applicationId);
    if (!app) throw notFound("No application with this id.");
    if (app.firstParty) throw forbidden("The built-in dashboard client cannot be managed through the API.");
    if (app.organizationId !== organizationId) throw forbidden("This application belongs to another organization.");
    return app;
  }

  async function list(organizationId: string, page: number, pageSize: number) {
    return applications.list(organizationId, page, pageSize);
  }

  /** Creates the application; a confidential one gets its secret (returned here only) in the same transaction. */
  async function create(
    organizationId: string,
    input: ApplicationInput,
    by?: AdminAction,
  ): Promise<{ application: Application; clientSecret?: string }> {
    checkSettings(input, isConfigured);
    checkClientAuthSettings(
      {
        clientCredentials: input.clientCredentials ?? { enabled: false, scopes: [] },
        resources: input.resources ?? [],
        tokenEndpointAuthMethod: input.tokenEndpointAuthMethod ?? null,
        jwks: input.jwks ?? null,
        jwksUri: input.jwksUri ?? null,
      },
      input.clientType,
    );
    const at = clock.now().toISOString();
    const row: ApplicationRow = {
      id: randomUUID(),
      organization_id: organizationId,
      name: input.name,
      client_id: newClientId(input.name),
      client_type: input.clientType,
      redirect_uris: JSON.stringify(input.redirectUris),
      allowed_scopes: JSON.stringify(input.allowedScopes ?? DEFAULT_SCOPES),
      enabled_providers: JSON.stringify(input.enabledProviders ?? []),
      branding: JSON.stringify(input.branding ?? {}),
      first_party: false,
      created_at: at,
      updated_at: at,
      enabled: true,
      tokens_not_before: null,
      allowed_origins: input.allowedOrigins ? JSON.stringify(input.allowedOrigins) : null,
      require_verified_email: input.requireVerifiedEmail ?? false,
      require_pushed_authorization_requests: input.requirePushedAuthorizationRequests ?? false,
      mfa_policy: ownPolicy(input.secondFactor),
      api_scopes: input.apiScopes?.length ? JSON.stringify(input.apiScopes) : null,
      post_logout_redirect_uris: JSON.stringify(input.postLogoutRedirectUris ?? []),
      device_authorization: input.deviceAuthorization ?? false,
      ...clientAuthColumns(input),
      backchannel_logout_uri: input.backchannelLogoutUri ?? null,
      backchannel_logout_session_required: input.backchannelLogoutSessionRequired ?? false,
      dpop_bound_access_tokens: input.dpopBoundAccessTokens ?? false,
    };
    const clientSecret = input.clientType === "confidential" ? newClientSecret() : undefined;
    await transaction(async (trx) => {
      await applications.insert(row, trx);
      await applications.replaceOrigins(
        row.id,
        browserOrigins({ redirectUris: input.redirectUris, allowedOrigins: input.allowedOrigins ?? null }),
        trx,
      );
      if (clientSecret) {
        await applications.insertSecret(
          {
            id: randomUUID(),
            application_id: row.id,
            secret_hash: hashClientSecret(clientSecretKey, clientSecret),
            created_at: at,
            expires_at: null,
          },
          trx,
        );
      }
      await recordChange(
        trx,
        by,
        "application.created",
        { id: row.id, organizationId },
        { name: input.name, clientType: input.clientType },
      );
    });
    return { application: (await applications.findById(row.id))!, ...(clientSecret ? { clientSecret } : {}) };
  }

  async function update(organizationId: string, applicationId: string, patch: ApplicationPatch, by?: AdminAction): Promise<Application> {
    const current = await owned(organizationId, applicationId);
    checkSettings(patch, isConfigured);
    const given = Object.fromEntries(Object.entries(clientAuthOf(patch)).filter(([, v]) => v !== undefined));
    checkClientAuthSettings({ ...currentClientAuthSettings(current), ...given }, current.clientType);
    const at = clock.now().toISOString();
    const changes: Partial<ApplicationRow> = { updated_at: at, ...clientAuthColumns(patch) };
    if (patch.name !== undefined) changes.name = patch.name;
    if (patch.redirectUris !== undefined) changes.redirect_uris = JSON.stringify(patch.redirectUris);
    if (patch.allowedScopes !== undefined) changes.allowed_scopes = JSON.stringify(patch.allowedScopes);
    if (patch.enabledProviders !== undefined) changes.enabled_providers = JSON.stringify(patch.enabledProviders);
    if (patch.branding !== undefined) changes.branding = JSON.stringify(patch.branding);
    if (patch.enabled !== undefined) changes.enabled = patch.enabled;
    if (patch.allowedOrigins !== undefined) changes.allowed_origins = patch.allowedOrigins ? JSON.stringify(patch.allowedOrigins) : null;
    if (patch.requireVerifiedEmail !== undefined) changes.require_verified_email = patch.requireVerifiedEmail;
    if (patch.requirePushedAuthorizationRequests !== undefined)
      changes.require_pushed_authorization_requests = patch.requirePushedAuthorizationRequests;
    // The policy is a column of the application row, so it changes with the rest and its audit event.
    if (patch.secondFactor !== undefined) changes.mfa_policy = ownPolicy(patch.secondFactor);
    if (patch.apiScopes !== undefined) changes.api_scopes = patch.apiScopes.length ? JSON.stringify(patch.apiScopes) : null;
    if (patch.postLogoutRedirectUris !== undefined) changes.post_logout_redirect_uris = JSON.stringify(patch.postLogoutRedirectUris);
    if (patch.deviceAuthorization !== undefined) changes.device_authorization = patch.deviceAuthorization;
    if (patch.backchannelLogoutUri !== undefined) changes.backchannel_logout_uri = patch.backchannelLogoutUri;
    if (patch.backchannelLogoutSessionRequired !== undefined)
      changes.backchannel_logout_session_required = patch.backchannelLogoutSessionRequired;
    if (patch.dpopBoundAccessTokens !== undefined) changes.dpop_bound_access_tokens = patch.dpopBoundAccessTokens;
    // Disabling stamps the moment: what was issued before it stays ended after enabling again
    // (X-ID-TOK-5), with no write to the grants themselves (one column, however many grants).
    if (patch.enabled === false && current.enabled) changes.tokens_not_before = at;
    const originsChanged = patch.redirectUris !== undefined || patch.allowedOrigins !== undefined;
    const origins = browserOrigins({
      redirectUris: patch.redirectUris ?? current.redirectUris,
      allowedOrigins: patch.allowedOrigins === undefined ? current.allowedOrigins : patch.allowedOrigins,
    });
    await transaction(async (trx) => {
      await applications.update(applicationId, changes, trx);
      if (originsChanged) await applications.replaceOrigins(applicationId, origins, trx);
      const changedFields = Object.keys(patch).filter((k) => patch[k as keyof ApplicationPatch] !== undefined);
      await recordChange(trx, by, "application.updated", current, { changedFields });
    });
    const app = await applications.findById(applicationId);
    if (!app) throw notFound("No application with this id."); // deleted concurrently
    return app;
  }

  /** Deletes it; everything hanging off it (secrets, codes, tokens, webhooks) goes by cascade. */
  async function remove(organizationId: string, applicationId: string, by?: AdminAction): Promise<void> {
    const app = await owned(organizationId, applicationId);
    await transaction(async (trx) => {
      await applications.remove(applicationId, trx);
      await recordChange(trx, by, "application.deleted", app, { name: app.name });
    });
  }

  /**
   * A new secret (returned once). Every older secret stops working at once, or after
   * `overlapSeconds` (0-86400) so deployments can switch without downtime. The application row is
   * touched first: on PostgreSQL that row lock serialises concurrent regenerations, so exactly one
   * secret ends up current.
   */
  async function regenerateSecret(organizationId: string, applicationId: string, overlapSeconds = 0, by?: AdminAction) {
    const app = await owned(organizationId, applicationId);
    if (app.clientType !== "confidential") throw conflict("Public clients have no client secret.", "public_client");
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_SECRET_OVERLAP_SECONDS) {
      throw invalid("validation_failed", "overlapSeconds must be 0-86400.", [
        { field: "body.overlapSeconds", message: "must be an integer 0-86400" },
      ]);
    }
    const now = clock.now();
    const at = now.toISOString();
    const previousExpiresAt = new Date(now.getTime() + overlapSeconds * 1000).toISOString();
    const clientSecret = newClientSecret();
    await transaction(async (trx) => {
      await applications.update(applicationId, { updated_at: at }, trx);
      await applications.purgeExpiredSecrets(applicationId, at, trx);
      await applications.retireSecrets(applicationId, previousExpiresAt, trx);
      await applications.insertSecret(
        {
          id: randomUUID(),
          application_id: applicationId,
          secret_hash: hashClientSecret(clientSecretKey, clientSecret),
          created_at: at,
          expires_at: null,
        },
        trx,
      );
      await recordChange(trx, by, "application.secret_regenerated", app, { overlapSeconds });
    });
    return { clientId: app.clientId, clientSecret, previousSecretExpiresAt: overlapSeconds > 0 ? previousExpiresAt : null };
  }

  /**
   * Client authentication at the token, revocation and introspection endpoints: the application
   * when the client id exists and, for a confidential client, the secret matches an active one
   * (one HMAC and constant-time compares, on every token request). A public client must send no secret.
   * Unknown clients cost the same HMAC, so timing does not tell them apart.
   */
  async function authenticateClient(clientId: string, secret: string | undefined): Promise<Application | undefined> {
    const found = await applications.findClient(clientId, clock.now().toISOString());
    if (!found) {
      if (secret !== undefined) secretMatchesAny(clientSecretKey, secret, []);
      return undefined;
    }
    const app = found.application;
    // A disabled client fails like an unknown one (X-ID-TOK-5), after the same HMAC.
    if (!app.enabled) {
      if (secret !== undefined) secretMatchesAny(clientSecretKey, secret, []);
      return undefined;
    }
    if (app.clientType === "public") return secret === undefined ? app : undefined;
    if (secret === undefined) return undefined;
    return secretMatchesAny(clientSecretKey, secret, found.secretHashes) ? app : undefined;
  }

  return { owned, list, create, update, remove, regenerateSecret, authenticateClient };
}

export type Applications = ReturnType<typeof createApplications>;
