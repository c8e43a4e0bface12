/**
 * Set-up helpers for the identity suite. They may use the in-process service to arrange a state
 * (mint a dashboard token for a bootstrap admin); tests check outcomes over HTTP only.
 */
import { randomBytes } from "node:crypto";
import type { components } from "../../generated/sdk/types/identity.ts";
import { expectStatus, identityApi } from "./api.ts";
import { request } from "./http.ts";
import { uniqueEmail, type IdentityTarget } from "./targets.ts";
import { skipWhenRegistrationRefused } from "./skip.ts";

export const DASHBOARD_CLIENT_ID = "identity-dashboard";

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
  if (!token) deploymentTokens.set(key, (token = import("./oauth-flow.ts").then((flow) => flow.adminTokenViaFlow(target, admin))));
  return token;
}

/** An access token for any user and client, as the token endpoint would issue it. */
export async function userToken(target: IdentityTarget, userId: string, options: { clientId: string; scopes: string[] }): Promise<string> {
  const { token } = await inProcess(target).ctx.accessTokens.issue({ userId, clientId: options.clientId, scopes: options.scopes });
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

/** `Authorization: Basic` for a client (RFC 6749 §2.3.1: each part form-urlencoded first). */
export const basicAuth = (clientId: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`;

/** Introspects a dummy token as the client: 200 when its credentials are accepted, 401 `invalid_client` when not. */
export async function clientCredentialsAccepted(target: IdentityTarget, clientId: string, secret: string) {
  return request(target.url, "POST", "/oauth/introspect", {
    headers: { authorization: basicAuth(clientId, secret), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: "not-a-token" }).toString(),
  });
}
