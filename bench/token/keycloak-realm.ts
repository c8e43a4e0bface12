/**
 * The realm, client and user bench/token.ts measures Keycloak with, configured through its admin REST
 * API (plain HTTP, not kcadm, which starts a JVM per command) to do the same work per request as ours:
 * - refresh tokens rotated on every use and refused on reuse (`revokeRefreshToken`,
 *   `refreshTokenMaxReuse: 0`); they belong to the sign-in's user session, which Keycloak 26 keeps
 *   in the database (persistent user sessions), as ours keeps its grants (keycloak-login.ts says why
 *   not offline tokens);
 * - every token signed with ES256 (the realm's default algorithm, an ES256 key of its own at a
 *   priority above the generated RS256 key, and the client's access and ID token algorithms);
 * - the confidential client with client_secret_basic, PKCE S256 required, one redirect URI, and
 *   service accounts enabled for the client_credentials grant; its `api:read` scope puts the API
 *   (BENCH_API.resource) in the access token's audience. Keycloak has no RFC 8707 `resource`
 *   parameter: it ignores it, and the audience comes from the scope instead.
 * - one user with a password. The password's hash is one PBKDF2 iteration: it is checked only when
 *   codes are minted (the login form, not timed), never on the token endpoint, and the default
 *   (hundreds of thousands of iterations) would make minting a run's codes take minutes.
 */
import { request } from "undici";
import { BENCH_API, type BenchClient } from "./protocol.ts";

export const REALM = "bench";
const REDIRECT_URI = "https://client.example.com/callback";

export interface BenchUser {
  username: string;
  password: string;
}

/** A JSON call to the admin API; any status but the expected ones throws with Keycloak's answer. */
async function call(
  base: string,
  token: string,
  method: "GET" | "POST" | "PUT",
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown; location?: string }> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`Keycloak admin ${method} ${path}: ${res.statusCode} ${text.slice(0, 500)}`);
  const location = res.headers.location;
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined, ...(typeof location === "string" ? { location } : {}) };
}

/** The id at the end of a 201's Location header. */
const createdId = (location: string | undefined, what: string): string => {
  const id = location?.split("/").pop();
  if (!id) throw new Error(`Keycloak admin: creating ${what} answered no Location`);
  return id;
};

/** The master realm's admin token (the bootstrap admin, through admin-cli's password grant). */
async function adminToken(base: string, username: string, password: string): Promise<string> {
  const res = await request(`${base}/realms/master/protocol/openid-connect/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "password", client_id: "admin-cli", username, password }).toString(),
  });
  const json = (await res.body.json()) as { access_token?: string };
  if (res.statusCode !== 200 || !json.access_token) throw new Error(`Keycloak admin token: ${res.statusCode} ${JSON.stringify(json)}`);
  return json.access_token;
}

/** Creates the realm, its ES256 key, the API's client scope, the client and the user; returns the client and the user. */
export async function configureRealm(
  base: string,
  admin: { username: string; password: string },
  secrets: { clientSecret: string; userPassword: string },
): Promise<{ client: BenchClient; user: BenchUser }> {
  const token = await adminToken(base, admin.username, admin.password);
  const realmPath = `/admin/realms/${REALM}`;
  await call(base, token, "POST", "/admin/realms", {
    realm: REALM,
    enabled: true,
    revokeRefreshToken: true,
    refreshTokenMaxReuse: 0,
    defaultSignatureAlgorithm: "ES256",
    // As oidc-provider's peer: codes live 10 minutes (a run's codes are minted before it), tokens an hour.
    accessCodeLifespan: 600,
    accessTokenLifespan: 3600,
    passwordPolicy: "hashAlgorithm(pbkdf2-sha256) and hashIterations(1)",
    components: {
      "org.keycloak.keys.KeyProvider": [
        {
          name: "bench-es256",
          providerId: "ecdsa-generated",
          config: { priority: ["200"], ecdsaEllipticCurveKey: ["P-256"], active: ["true"], enabled: ["true"] },
        },
      ],
    },
  });

  const apiScopeId = createdId(
    (
      await call(base, token, "POST", `${realmPath}/client-scopes`, {
        name: BENCH_API.scope,
        protocol: "openid-connect",
        attributes: { "include.in.token.scope": "true", "display.on.consent.screen": "false" },
        protocolMappers: [
          {
            name: "api audience",
            protocol: "openid-connect",
            protocolMapper: "oidc-audience-mapper",
            config: { "included.custom.audience": BENCH_API.resource, "access.token.claim": "true", "id.token.claim": "false" },
          },
        ],
      })
    ).location,
    "the API's client scope",
  );

  const client: BenchClient = { clientId: "bench-client", clientSecret: secrets.clientSecret, redirectUri: REDIRECT_URI };
  const clientId = createdId(
    (
      await call(base, token, "POST", `${realmPath}/clients`, {
        clientId: client.clientId,
        enabled: true,
        protocol: "openid-connect",
        publicClient: false,
        clientAuthenticatorType: "client-secret",
        secret: client.clientSecret,
        redirectUris: [REDIRECT_URI],
        standardFlowEnabled: true,
        directAccessGrantsEnabled: false,
        serviceAccountsEnabled: true,
        consentRequired: false,
        attributes: {
          "pkce.code.challenge.method": "S256",
          "access.token.signed.response.alg": "ES256",
          "id.token.signed.response.alg": "ES256",
        },
      })
    ).location,
    "the client",
  );
  await call(base, token, "PUT", `${realmPath}/clients/${clientId}/optional-client-scopes/${apiScopeId}`);

  const user: BenchUser = { username: "bench", password: secrets.userPassword };
  await call(base, token, "POST", `${realmPath}/users`, {
    username: user.username,
    enabled: true,
    email: "bench@example.com",
    emailVerified: true,
    firstName: "Bench",
    lastName: "User",
    credentials: [{ type: "password", value: user.password, temporary: false }],
  });
  return { client, user };
}
