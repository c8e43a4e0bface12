/**
 * The built-in first-party public client `identity-account` (X-ID-ACCT-1): the account page signs
 * its user in through this server's own hosted login, as Keycloak's account console is a client of
 * its realm. Its redirect URIs are the account page and its Security page on this server's public
 * URL (X-ID-MFA-10), so the sign-in always comes back to one of them and never anywhere a request names. It enables every social provider the
 * deployment configures, so whoever signs in to an application socially can reach their account.
 * Created (or brought up to date) at every start.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import type { ApplicationStore } from "../storage/applications.ts";

export const ACCOUNT_CLIENT_ID = "identity-account";
export const ACCOUNT_PATH = "/account";
export const SECURITY_PATH = "/account/security";
/** The device grant's verification page (X-ID-DEV-3) signs its user in through this client too. */
export const DEVICE_VERIFICATION_PATH = "/device";

/** The pages of the account client that a sign-in may come back to, each its own redirect URI. */
export type AccountClientPage = typeof ACCOUNT_PATH | typeof SECURITY_PATH | typeof DEVICE_VERIFICATION_PATH;

export const accountRedirectUri = (issuer: string, path: AccountClientPage = ACCOUNT_PATH) => `${issuer}${path}`;

export async function ensureAccountClient(
  applications: ApplicationStore,
  issuer: string,
  providers: string[],
  clock: Clock,
): Promise<void> {
  const now = clock.now().toISOString();
  const redirectUris = JSON.stringify([
    accountRedirectUri(issuer),
    accountRedirectUri(issuer, SECURITY_PATH),
    accountRedirectUri(issuer, DEVICE_VERIFICATION_PATH),
  ]);
  const enabledProviders = JSON.stringify(providers);
  const existing = await applications.findByClientId(ACCOUNT_CLIENT_ID);
  if (existing) {
    if (JSON.stringify(existing.redirectUris) !== redirectUris || JSON.stringify(existing.enabledProviders) !== enabledProviders)
      await applications.update(existing.id, { redirect_uris: redirectUris, enabled_providers: enabledProviders, updated_at: now });
    return;
  }
  await applications.insertIfAbsent({
    id: randomUUID(),
    organization_id: null,
    name: "Your account",
    client_id: ACCOUNT_CLIENT_ID,
    client_type: "public",
    redirect_uris: redirectUris,
    allowed_scopes: JSON.stringify(["openid"]),
    enabled_providers: enabledProviders,
    branding: JSON.stringify({}),
    first_party: true,
    created_at: now,
    updated_at: now,
  });
}

/**
 * Where the account page sends a browser without a session: this server's authorization endpoint
 * for the account client. The code that comes back is never exchanged: the sign-in's session
 * cookie is what the page needs, and the PKCE verifier is thrown away, so the code is worthless
 * to anyone who sees it (and it expires unused).
 */
export function accountSignInPath(issuer: string, page: AccountClientPage = ACCOUNT_PATH, state?: string): string {
  const verifier = randomBytes(32).toString("base64url");
  const params = new URLSearchParams({
    client_id: ACCOUNT_CLIENT_ID,
    redirect_uri: accountRedirectUri(issuer, page),
    response_type: "code",
    scope: "openid",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
  });
  // What the page needs again after the sign-in (the device page's user code, X-ID-DEV-9) rides in `state`.
  if (state !== undefined) params.set("state", state);
  return `/oauth/authorize?${params.toString()}`;
}
