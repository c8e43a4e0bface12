/**
 * The built-in first-party public client `identity-dashboard` (X-ID-ADM-1): the dashboard signs
 * admins in through this server with Authorization Code + PKCE. Its one redirect URI is the
 * dashboard on this server's public URL: it never asks for consent, so a loopback URI would hand
 * an admin's code to whatever local process listens on the port. Created (or brought up to date
 * with the issuer, dropping the loopback URIs it once had) at every start.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import type { ApplicationStore } from "../storage/applications.ts";
import { DASHBOARD_CLIENT_ID } from "./access-tokens.ts";

export const dashboardRedirectUris = (issuer: string) => [`${issuer}/dashboard`];

export async function ensureDashboardClient(applications: ApplicationStore, issuer: string, clock: Clock): Promise<void> {
  const now = clock.now().toISOString();
  const redirectUris = JSON.stringify(dashboardRedirectUris(issuer));
  const existing = await applications.findByClientId(DASHBOARD_CLIENT_ID);
  if (existing) {
    if (JSON.stringify(existing.redirectUris) !== redirectUris)
      await applications.update(existing.id, { redirect_uris: redirectUris, updated_at: now });
    return;
  }
  await applications.insertIfAbsent({
    id: randomUUID(),
    organization_id: null,
    name: "Identity dashboard",
    client_id: DASHBOARD_CLIENT_ID,
    client_type: "public",
    redirect_uris: redirectUris,
    allowed_scopes: JSON.stringify(["openid", "profile", "email", "offline_access"]),
    enabled_providers: JSON.stringify([]),
    branding: JSON.stringify({}),
    first_party: true,
    created_at: now,
    updated_at: now,
  });
}
