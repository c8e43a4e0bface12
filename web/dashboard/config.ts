/** What the dashboard is, as a client of this server (X-ID-ADM-1): fixed by the seed, not configurable. */
export const issuer = location.origin;
export const CLIENT_ID = "identity-dashboard";
export const REDIRECT_URI = `${issuer}/dashboard`;
export const SCOPE = "openid profile email";
export const PAGE_SIZE = 20;

/** The scopes an application may be allowed, with the words the settings form shows. */
export const SCOPES: ReadonlyArray<readonly [scope: string, label: string]> = [
  ["openid", "User id (openid)"],
  ["profile", "Profile: name (profile)"],
  ["email", "Email address (email)"],
  ["offline_access", "Refresh tokens (offline_access)"],
];
