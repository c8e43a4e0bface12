/**
 * Fixtures for fuzzing the identity service (scripts/schemathesis.sh identity), made over HTTP only,
 * the way a script or a real client would make them:
 *
 * - an admin token through the dashboard's own flow (X-ID-ADM-1): the first-party public client
 *   `identity-dashboard`, its one redirect URI `{issuer}/dashboard`, Authorization Code + PKCE;
 * - a confidential application (with the run's social provider `fuzzhub` enabled) for the OAuth
 *   endpoints, and a spare application with a webhook and a test delivery (so path ids are real)
 *   for the administration and webhook operations to change, and an application and a webhook
 *   for the deletes;
 * - a pending authorization request of that application (its `request_id` for the sign-up page
 *   and the social sign-in start);
 * - two users, registered through that application, each with a token of the dashboard client
 *   (the only client allowed to change or delete an account): one for the user operations, one
 *   for deleteMe (the first accepted deleteMe deletes its user, which must not be the main one).
 *
 *   node --import tsx fuzz/identity-fixtures.ts <base url> <admin email>   (admin password on stdin)
 *
 * Prints `export NAME='value'` lines for the shell; every value is a URL-safe token, an id or a
 * JWT, so single quotes are enough.
 */
import { createHash, randomBytes } from "node:crypto";

const [base, adminEmail] = process.argv.slice(2);
if (!base || !adminEmail) {
  console.error("usage: identity-fixtures.ts <base url> <admin email>  (admin password on stdin)");
  process.exit(2);
}
const adminPassword = (
  await new Promise<string>((resolve) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (text += chunk));
    process.stdin.on("end", () => resolve(text));
  })
).replace(/\r?\n$/, "");

const DASHBOARD_CLIENT_ID = "identity-dashboard";

function fail(message: string): never {
  console.error(`identity-fixtures: ${message}`);
  process.exit(1);
}

/** One request with a cookie jar that follows no redirect by itself. */
async function send(
  jar: Map<string, string>,
  method: string,
  path: string,
  o: { form?: Record<string, string>; json?: unknown; bearer?: string } = {},
) {
  const headers: Record<string, string> = {};
  if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  let body: string | undefined;
  if (o.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(o.form).toString();
  } else if (o.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(o.json);
  }
  const res = await fetch(`${base}${path}`, { method, headers, body, redirect: "manual" });
  for (const line of res.headers.getSetCookie()) {
    const pair = line.split(";")[0]!;
    const eq = pair.indexOf("=");
    jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  const text = await res.text();
  return { status: res.status, location: res.headers.get("location") ?? "", text, json: () => JSON.parse(text) };
}

/** Signs a user in on the hosted page and exchanges the code (PKCE S256; with a secret for a confidential client). */
async function tokenViaFlow(o: {
  clientId: string;
  clientSecret?: string;
  redirectUri: string;
  scope: string;
  email: string;
  password: string;
}) {
  const jar = new Map<string, string>();
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const q = new URLSearchParams({
    client_id: o.clientId,
    redirect_uri: o.redirectUri,
    response_type: "code",
    scope: o.scope,
    state: "fuzz",
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  const page = await send(jar, "GET", `/oauth/authorize?${q}`);
  if (page.status !== 200) fail(`authorization page for ${o.clientId}: ${page.status} ${page.text.slice(0, 200)}`);
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(page.text)?.[1] ?? "";
  const login = await send(jar, "POST", "/oauth/authorize", {
    form: { action: "login", csrf_token: field("csrf_token"), request_id: field("request_id"), email: o.email, password: o.password },
  });
  const code = login.location ? new URL(login.location).searchParams.get("code") : null;
  if (!code) fail(`sign-in for ${o.clientId} did not redirect with a code: ${login.status} ${login.location || login.text.slice(0, 200)}`);
  const form: Record<string, string> = {
    grant_type: "authorization_code",
    code,
    redirect_uri: o.redirectUri,
    client_id: o.clientId,
    code_verifier: verifier,
  };
  if (o.clientSecret) form.client_secret = o.clientSecret;
  const token = await send(new Map(), "POST", "/oauth/token", { form });
  if (token.status !== 200) fail(`token exchange for ${o.clientId}: ${token.status} ${token.text}`);
  return token.json() as { access_token: string; refresh_token?: string };
}

/** A JSON API call that must succeed with `expected`. */
async function api(method: string, path: string, bearer: string, json: unknown, expected: number) {
  const res = await send(new Map(), method, path, { json, bearer });
  if (res.status !== expected) fail(`${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.json();
}

// The dashboard client redirects only to the dashboard on the issuer's own URL (X-ID-ADM-1), which
// may differ from the address this script reaches the service at.
const issuer = (await send(new Map(), "GET", "/.well-known/oauth-authorization-server")).json().issuer as string;
const DASHBOARD_REDIRECT = `${issuer}/dashboard`;

const admin = await tokenViaFlow({
  clientId: DASHBOARD_CLIENT_ID,
  redirectUri: DASHBOARD_REDIRECT,
  scope: "openid profile email",
  email: adminEmail,
  password: adminPassword,
});

/** What the admin creates: a POST answered 201, its body. */
const adminCreates = (path: string, json: unknown) => api("POST", path, admin.access_token, json, 201);

const app = await adminCreates("/api/applications", {
  name: "Fuzz App",
  clientType: "confidential",
  redirectUris: ["https://fuzz.example/callback"],
  allowedScopes: ["openid", "profile", "email", "offline_access"],
  enabledProviders: ["fuzzhub"],
});
// A second application for the administration and webhook operations to change at will (rename,
// rotate its secret, add webhooks). No user signs in through it, so no user event fans out to the
// hundreds of webhooks the fuzzer creates on it; the first one is the fixture's.
const spare = await adminCreates("/api/applications", {
  name: "Fuzz Spare App",
  clientType: "confidential",
  redirectUris: ["https://spare.fuzz.example/callback"],
});
const appPath = `/api/applications/${spare.id}`;
// Deliveries go to a closed loopback port: each attempt fails at once (the service allows
// 127.0.0.1 targets in this run), so the history fills without a receiver.
const webhook = await adminCreates(`${appPath}/webhooks`, {
  url: "http://127.0.0.1:9/fuzz-hook",
  events: ["user.created", "user.updated", "user.deleted"],
  maxRetries: 0,
  retryDelaySeconds: 1,
});
// What the deletes remove (a delete's first accepted case removes its fixture; the others keep theirs).
const doomedApp = await adminCreates("/api/applications", {
  name: "Fuzz Doomed App",
  clientType: "public",
  redirectUris: ["http://localhost/callback"],
});
const doomedWebhook = await adminCreates(`${appPath}/webhooks`, { url: "http://127.0.0.1:9/doomed-hook", events: ["user.deleted"] });
const delivery = await api("POST", `${appPath}/webhooks/${webhook.id}/test`, admin.access_token, {}, 202);

async function user(label: string) {
  const email = `fuzz-${label}-${randomBytes(4).toString("hex")}@example.com`;
  const password = `pw-${randomBytes(12).toString("hex")}`;
  await api("POST", "/api/users", "", { clientId: app.clientId, email, password, firstName: "Fuzz", lastName: label }, 201);
  return tokenViaFlow({ clientId: DASHBOARD_CLIENT_ID, redirectUri: DASHBOARD_REDIRECT, scope: "openid profile email", email, password });
}
const mainUser = await user("main");
const doomedUser = await user("doomed");

// A pending authorization request: the login page of the fixture application carries its id.
const pending = await send(
  new Map(),
  "GET",
  `/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: "https://fuzz.example/callback", response_type: "code", scope: "openid", state: "fuzz" })}`,
);
const requestId = /name="request_id" value="([^"]*)"/.exec(pending.text)?.[1];
if (pending.status !== 200 || !requestId) fail(`no pending authorization request: ${pending.status}`);

const out: Record<string, string> = {
  FUZZ_ADMIN_TOKEN: admin.access_token,
  FUZZ_USER_TOKEN: mainUser.access_token,
  FUZZ_DOOMED_USER_TOKEN: doomedUser.access_token,
  FUZZ_SPARE_APP_ID: spare.id,
  FUZZ_DOOMED_APP_ID: doomedApp.id,
  FUZZ_CLIENT_ID: app.clientId,
  FUZZ_CLIENT_SECRET: app.clientSecret,
  FUZZ_WEBHOOK_ID: webhook.id,
  FUZZ_DOOMED_WEBHOOK_ID: doomedWebhook.id,
  FUZZ_DELIVERY_ID: delivery.deliveryId,
  FUZZ_REQUEST_ID: requestId,
};
for (const [name, value] of Object.entries(out)) {
  if (!/^[A-Za-z0-9._~:/-]*$/.test(value)) fail(`${name} has an unexpected character`);
  console.log(`export ${name}='${value}'`);
}
