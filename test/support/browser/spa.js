// A single-page application as a third party writes one (the browser tests): no server of its own
// beyond static files, a public client, Authorization Code + PKCE with oauth4webapi, and every call
// made by this page with fetch. Configured with an `audience` (an API's RFC 8707 resource indicator)
// and that API's base URL as `resource`, it asks for tokens for that API with its scope `repository`
// and calls the repository API (`GET /auth/me`, `POST /repository`, `GET /repository`); otherwise it
// calls identity's UserInfo. It reports each step in #status, which the test reads.
import * as oauth from "/oauth4webapi.js";

const { issuer, clientId, resource, audience } = document.body.dataset;
const client = { client_id: clientId };
const redirectUri = `${location.origin}/callback`;
// The test's services are plain http on 127.0.0.1; oauth4webapi refuses that unless told.
const options = { [oauth.allowInsecureRequests]: true };
const status = document.getElementById("status");
const report = (text) => (status.textContent = text);

/** Runs one step; a failure is reported with the step's name and the error as fetch gave it. */
async function step(name, run) {
  try {
    return await run();
  } catch (err) {
    report(`${name} failed: ${err?.name}: ${err?.message}${err?.cause ? ` (${err.cause})` : ""}`);
    throw err;
  }
}

/** A call to the repository API with the access token; its JSON, or a failure naming the status. */
async function repositoryCall(token, method, path, body) {
  const headers = new Headers(body ? { "content-type": "application/json" } : {});
  const res = await oauth.protectedResourceRequest(
    token,
    method,
    new URL(`${resource}${path}`),
    headers,
    body ? JSON.stringify(body) : null,
    options,
  );
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** What the page does with its tokens: the repository API's calls, or UserInfo. */
async function useTokens(as, tokens) {
  if (audience) {
    const me = await step("Repository /auth/me", () => repositoryCall(tokens.access_token, "GET", "/auth/me"));
    await step("Repository create", () => repositoryCall(tokens.access_token, "POST", "/repository", { name: "from-the-browser" }));
    const list = await step("Repository list", () => repositoryCall(tokens.access_token, "GET", "/repository"));
    report(`Repository user ${me.id}: ${list.items.map((r) => r.name).join(", ")}`);
    return;
  }
  const claims = oauth.getValidatedIdTokenClaims(tokens);
  const info = await step("UserInfo request", async () =>
    oauth.processUserInfoResponse(as, client, claims.sub, await oauth.userInfoRequest(as, client, tokens.access_token, options)),
  );
  report(`Signed in as ${info.email}`);
}

async function main() {
  const as = await step("Discovery", async () =>
    oauth.processDiscoveryResponse(new URL(issuer), await oauth.discoveryRequest(new URL(issuer), { algorithm: "oidc", ...options })),
  );
  if (location.pathname !== "/callback") {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    sessionStorage.setItem("tx", JSON.stringify({ verifier, state }));
    const url = new URL(as.authorization_endpoint);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: "code",
      // RFC 8707: tokens for the API, with its API scope (identity's X-ID-RES-1..3).
      ...(audience ? { scope: "openid repository", resource: audience } : { scope: "openid email" }),
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }).toString();
    report("Redirecting to sign in…");
    location.assign(url.toString());
    return;
  }
  const tx = JSON.parse(sessionStorage.getItem("tx") ?? "null");
  sessionStorage.removeItem("tx");
  const params = oauth.validateAuthResponse(as, client, new URL(location.href), tx?.state);
  const tokens = await step("Token request", async () =>
    oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, tx.verifier, options),
    ),
  );
  await useTokens(as, tokens);
}

main().catch((err) => console.error(err));
