/**
 * Set-up helpers for the identity suite, on top of the harness: targets (targets.ts), the OAuth
 * driver (oauth-flow.ts), typed clients (api.ts) and the deployment's user pool (user-pool.ts).
 * They may use the in-process service to arrange a state (an application, a user, a dashboard
 * token for a bootstrap admin), never to check an outcome: tests check outcomes over HTTP only.
 * On a deployment they go through its API (the configured admin's organization, the user pool).
 */
import { randomBytes } from "node:crypto";
import type { components } from "../../generated/sdk/types/identity.ts";
import { expectStatus, identityApi } from "./api.ts";
import { request } from "./http.ts";
import { adminTokenViaFlow, authorizeWithPassword, basicAuth, DASHBOARD_CLIENT_ID, dashboardTokensViaFlow } from "./oauth-flow.ts";
import { skipWhenRegistrationRefused } from "./skip.ts";
import { uniqueEmail, type IdentityTarget } from "./targets.ts";
import { claimPoolUser } from "./user-pool.ts";

export interface Organization {
  organizationId: string;
  admin: { email: string; password: string; userId: string };
}

function inProcess(target: IdentityTarget) {
  // Tests that mint tokens this way skip on a deployment (harness/skip.ts), before they get here.
  if (!target.service) throw new Error("this fixture needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  return target.service;
}

/**
 * A dashboard access token for the organization's admin, minted in-process (a fixture until the
 * browserless Authorization Code + PKCE sign-in helper exists; the token is the one that flow issues).
 */
export async function adminToken(target: IdentityTarget, organization: Organization): Promise<string> {
  if (!target.service) return deploymentAdminToken(target, organization.admin);
  return userToken(target, organization.admin.userId, { clientId: DASHBOARD_CLIENT_ID, scopes: ["openid", "profile", "email"] });
}

const deploymentTokens = new Map<string, Promise<string>>();
/**
 * On a deployment: CONFORMANCE_IDENTITY_ADMIN_TOKEN, or the admin signs in once per file through
 * the hosted login form (Authorization Code + PKCE with the dashboard client, as scripts do).
 */
function deploymentAdminToken(target: IdentityTarget, admin: { email: string; password: string }): Promise<string> {
  const given = process.env.CONFORMANCE_IDENTITY_ADMIN_TOKEN;
  if (given && admin.email === process.env.CONFORMANCE_IDENTITY_ADMIN_EMAIL) return Promise.resolve(given);
  const key = `${target.url} ${admin.email}`;
  let token = deploymentTokens.get(key);
  if (!token) deploymentTokens.set(key, (token = adminTokenViaFlow(target, admin)));
  return token;
}

/** An access token for any user and client, as the token endpoint would issue it. */
export async function userToken(
  target: IdentityTarget,
  userId: string,
  options: { clientId: string; scopes: string[]; audience?: string },
): Promise<string> {
  const { token } = await inProcess(target).ctx.accessTokens.issue({ userId, ...options });
  return token;
}

type ApplicationCreate = components["schemas"]["ApplicationCreate"];

/** A valid application body, as the contract types it. */
const validApplication = (): ApplicationCreate => ({
  name: `App ${randomBytes(3).toString("hex")}`,
  clientType: "confidential",
  redirectUris: ["https://app.example.com/callback", "http://localhost/callback"],
  allowedScopes: ["openid", "profile", "email", "offline_access"],
});

/** A valid application body for the typed client; `overrides` replace fields. */
export const newApplication = (overrides: Partial<ApplicationCreate> = {}): ApplicationCreate => ({ ...validApplication(), ...overrides });

/** A valid application body; `overrides` replace fields, invalid ones too (for raw requests the contract forbids). */
export const applicationBody = (overrides: Record<string, unknown> = {}) => ({ ...validApplication(), ...overrides });

/** Creates an application through the admin API (201 expected) and returns the response body (with `clientSecret` for confidential clients). */
export async function createApplication(target: IdentityTarget, token: string, overrides: Partial<ApplicationCreate> = {}) {
  const body = newApplication(overrides);
  return expectStatus(identityApi(target, { token }).POST("/api/applications", { body }), 201, "createApplication");
}

/** Registers a user through `POST /api/users` and returns the user plus the password (on a deployment that refuses with 429, the test skips). */
export async function registerUser(
  target: IdentityTarget,
  clientId: string,
  overrides: Partial<components["schemas"]["UserRegistration"]> = {},
) {
  const body = {
    clientId,
    email: uniqueEmail("user"),
    password: `pw-${randomBytes(8).toString("hex")}`,
    firstName: "Grace",
    lastName: "Hopper",
    ...overrides,
  };
  const sent = identityApi(target).POST("/api/users", { body });
  // A deployment's registration limit (429) is not the test's failure: it skips with the reason.
  const { response, error } = await sent;
  skipWhenRegistrationRefused(target, response.status, error);
  const user = await expectStatus(sent, 201, "registerUser");
  return { ...user, password: body.password };
}

/** Introspects a dummy token as the client: 200 when its credentials are accepted, 401 `invalid_client` when not. */
export async function clientCredentialsAccepted(target: IdentityTarget, clientId: string, secret: string) {
  return request(target.url, "POST", "/oauth/introspect", {
    headers: { authorization: basicAuth(clientId, secret), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: "not-a-token" }).toString(),
  });
}

export interface TestApp {
  id: string;
  clientId: string;
  clientSecret?: string;
  redirectUri: string;
  name: string;
}

/** The application users register through on a deployment (one per file, uniquely named). */
let registrationApp: Promise<TestApp> | undefined;

/** An application of a fresh organization (confidential by default; allowed scopes: all four). */
export async function createApp(
  target: IdentityTarget,
  o: {
    clientType?: ApplicationCreate["clientType"];
    name?: string;
    redirectUris?: string[];
    allowedScopes?: NonNullable<ApplicationCreate["allowedScopes"]>;
    enabledProviders?: string[];
    branding?: ApplicationCreate["branding"];
    organizationId?: string;
    /** Resource indicators and API scopes (X-ID-RES-1, X-ID-RES-2). */
    resources?: string[];
    apiScopes?: string[];
    /** May use the device authorization grant (X-ID-DEV-8). */
    deviceAuthorization?: boolean;
  } = {},
): Promise<TestApp> {
  const organizationId = o.organizationId ?? (await target.createOrganization!()).organizationId;
  const redirectUris = o.redirectUris ?? [`https://app-${randomBytes(3).toString("hex")}.example/callback`];
  const name = o.name ?? `App ${randomBytes(3).toString("hex")}`;
  if (!target.service) {
    // A deployment: through the admin API, in the configured admin's organization.
    const body = {
      name,
      clientType: o.clientType ?? "confidential",
      redirectUris,
      allowedScopes: o.allowedScopes ?? ["openid", "profile", "email", "offline_access"],
      ...(o.enabledProviders ? { enabledProviders: o.enabledProviders } : {}),
      ...(o.branding ? { branding: o.branding } : {}),
      ...(o.resources ? { resources: o.resources } : {}),
      ...(o.apiScopes ? { apiScopes: o.apiScopes } : {}),
      ...(o.deviceAuthorization ? { deviceAuthorization: true } : {}),
    };
    const api = identityApi(target, { token: await adminToken(target, await target.createOrganization!()) });
    const app = await expectStatus(api.POST("/api/applications", { body }), 201, "POST /api/applications on the deployment");
    return {
      id: app.id,
      clientId: app.clientId,
      ...(app.clientSecret ? { clientSecret: app.clientSecret } : {}),
      redirectUri: redirectUris[0]!,
      name,
    };
  }
  const { application, clientSecret } = await inProcess(target).deps.accounts.createApplication(organizationId, {
    name,
    clientType: o.clientType ?? "confidential",
    redirectUris,
    allowedScopes: o.allowedScopes ?? ["openid", "profile", "email", "offline_access"],
    enabledProviders: o.enabledProviders ?? [],
    branding: o.branding ?? {},
    ...(o.resources ? { resources: o.resources } : {}),
    ...(o.apiScopes ? { apiScopes: o.apiScopes } : {}),
    ...(o.deviceAuthorization ? { deviceAuthorization: true } : {}),
  });
  return {
    id: application.id,
    clientId: application.clientId,
    ...(clientSecret ? { clientSecret } : {}),
    redirectUri: redirectUris[0]!,
    name,
  };
}

/**
 * A registered user with a password. On a deployment: a pre-made user of the run's pool
 * (CONFORMANCE_IDENTITY_USERS, user-pool.ts; `create-users` names them Grace Hopper, and other names
 * are set through PATCH /api/users/me with the user's own dashboard token), else one registered
 * over POST /api/users; a registration the deployment refuses with 429 skips the test with the
 * reason (in a beforeAll: the file does not start, and says why).
 */
export async function createUser(target: IdentityTarget, o: { firstName?: string; lastName?: string } = {}) {
  const email = uniqueEmail("user");
  const password = `pw-${randomBytes(8).toString("hex")}`;
  const firstName = o.firstName ?? "Grace";
  const lastName = o.lastName ?? "Hopper";
  if (!target.service) {
    const pooled = claimPoolUser();
    if (pooled) {
      if (firstName !== "Grace" || lastName !== "Hopper") {
        const { access_token } = await dashboardTokensViaFlow(target, pooled);
        const body = { firstName, lastName };
        await expectStatus(identityApi(target, { token: access_token }).PATCH("/api/users/me", { body }), 200, "naming a pool user");
      }
      return pooled;
    }
    // POST /api/users through an application of the admin's organization.
    const app = await (registrationApp ??= createApp(target, { clientType: "public", redirectUris: ["http://localhost/callback"] }));
    const body = { clientId: app.clientId, email, password, firstName, lastName };
    const { data, error, response } = await identityApi(target).POST("/api/users", { body });
    skipWhenRegistrationRefused(target, response.status, error);
    if (response.status !== 201 || !data) throw new Error(`POST /api/users on the deployment: ${response.status} ${JSON.stringify(error)}`);
    return { id: data.id, email, password };
  }
  const user = await inProcess(target).deps.accounts.registerUser({ email, password, firstName, lastName });
  return { id: user.id, email, password };
}

/**
 * An application of a fresh organization, a registered user, and that user signed in to it through
 * the hosted login form (Authorization Code + PKCE) for `scope`: the code is the caller's to exchange.
 */
export async function signedInUser(target: IdentityTarget, scope: string) {
  const app = await createApp(target);
  const user = await createUser(target);
  const flow = await authorizeWithPassword(target.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope,
  });
  return { app, user, flow };
}
