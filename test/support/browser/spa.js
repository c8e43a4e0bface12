// A single-page application as a third party writes one (the CORS browser test): no server of
// its own beyond static files, a public client, Authorization Code + PKCE with oauth4webapi, and
// every call to the identity service made by this page with fetch (discovery, token, UserInfo).
// It reports each step in #status, which the test reads.
import * as oauth from "/oauth4webapi.js";

const { issuer, clientId } = document.body.dataset;
const client = { client_id: clientId };
const redirectUri = `${location.origin}/callback`;
// The test's issuer is plain http on 127.0.0.1; oauth4webapi refuses that unless told.
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
      scope: "openid email",
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
  const claims = oauth.getValidatedIdTokenClaims(tokens);
  const info = await step("UserInfo request", async () =>
    oauth.processUserInfoResponse(as, client, claims.sub, await oauth.userInfoRequest(as, client, tokens.access_token, options)),
  );
  report(`Signed in as ${info.email}`);
}

main().catch((err) => console.error(err));
