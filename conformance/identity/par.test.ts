/** Pushed authorization requests (RFC 9126): X-ID-PAR-1..5, and a run of oauth4webapi's client. */
import { describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { createApplication, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  Browser,
  exchangeCode,
  formFields,
  loginForm,
  pkcePair,
  redirectParams,
  tokenRequest,
  type HttpResult,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() =>
  identityWorld({ apps: { app: {}, pub: { clientType: "public" }, other: { clientType: "public" } }, user: true, admin: true }),
);

const REQUEST_URI = /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/;

/** POST /oauth/par with a form; confidential applications authenticate with HTTP Basic. */
const push = (a: TestApp, form: Record<string, string>, baseUrl = world.target.url): Promise<HttpResult> =>
  tokenRequest(
    baseUrl,
    { ...(a.clientSecret ? {} : { client_id: a.clientId }), ...form },
    a.clientSecret ? { clientId: a.clientId, secret: a.clientSecret } : undefined,
    "/oauth/par",
  );

/** A valid authorization request of `a` with PKCE, and its verifier. */
function requestOf(a: TestApp, extra: Record<string, string> = {}) {
  const { verifier, challenge } = pkcePair();
  const form = {
    response_type: "code",
    redirect_uri: a.redirectUri,
    scope: "openid email",
    state: "st-1",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...extra,
  };
  return { form, verifier };
}

/** Pushes a valid request of `a`: its request_uri and verifier. */
async function pushed(a: TestApp, extra: Record<string, string> = {}, baseUrl = world.target.url) {
  const { form, verifier } = requestOf(a, extra);
  const res = await push(a, form, baseUrl);
  expect(res.status, res.text).toBe(201);
  return { requestUri: res.json.request_uri as string, verifier, form };
}

const byReference = (clientId: string, requestUri: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({ client_id: clientId, request_uri: requestUri, ...extra }).toString()}`;

/** Signs the world's user in on the login page `page` shows: the redirect with the code. */
async function signIn(browser: Browser, page: HttpResult) {
  expect(page.status, page.text).toBe(200);
  const done = await browser.post("/oauth/authorize", loginForm(formFields(page.text), world.user));
  expect(done.status, done.text).toBe(303);
  return done.location!;
}

describe("X-ID-PAR-1 the pushed authorization request endpoint", () => {
  it("X-ID-PAR-1 a confidential client (HTTP Basic) and a public client (client_id) get 201 with a request_uri and expires_in, not cached", async () => {
    for (const a of [world.app, world.pub]) {
      const res = await push(a, requestOf(a).form);
      expect(res.status, res.text).toBe(201);
      expect(res.json.request_uri).toMatch(REQUEST_URI);
      expect(res.json.expires_in).toBe(60);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("pragma")).toBe("no-cache");
    }
    const form = { ...requestOf(world.app).form, client_id: world.app.clientId, client_secret: world.app.clientSecret! };
    expect((await tokenRequest(world.target.url, form, undefined, "/oauth/par")).status).toBe(201);
  });

  it("X-ID-PAR-1 no client authentication, an unknown client or a wrong secret is 401 invalid_client", async () => {
    const { form } = requestOf(world.app);
    const none = await tokenRequest(world.target.url, form, undefined, "/oauth/par");
    expect(none.status).toBe(401);
    expect(none.json.error).toBe("invalid_client");
    const wrong = await tokenRequest(world.target.url, form, { clientId: world.app.clientId, secret: "wrong" }, "/oauth/par");
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toBe("invalid_client");
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
    const unknown = await tokenRequest(world.target.url, { ...form, client_id: "no-such-client" }, undefined, "/oauth/par");
    expect(unknown.status).toBe(401);
    expect(unknown.json.error).toBe("invalid_client");
  });

  it("X-ID-PAR-1 discovery names the endpoint and does not require it", async () => {
    const res = await new Browser(world.target.url).get("/.well-known/oauth-authorization-server");
    expect(res.json.pushed_authorization_request_endpoint).toBe(`${world.target.url}/oauth/par`);
    expect(res.json.require_pushed_authorization_requests).toBe(false);
  });
});

describe("X-ID-PAR-2 pushed parameters are checked as the authorization endpoint checks them", () => {
  it.each<{ what: string; extra: Record<string, string>; error: string }>([
    { what: "an unregistered redirect_uri", extra: { redirect_uri: "https://evil.example/steal" }, error: "invalid_request" },
    { what: "response_type token", extra: { response_type: "token" }, error: "unsupported_response_type" },
    { what: "no response_type", extra: { response_type: "" }, error: "invalid_request" },
    { what: "an unknown scope", extra: { scope: "openid admin" }, error: "invalid_scope" },
    { what: "a malformed code_challenge", extra: { code_challenge: "short" }, error: "invalid_request" },
    { what: "a request_uri", extra: { request_uri: "urn:ietf:params:oauth:request_uri:x" }, error: "invalid_request" },
    { what: "a bad code_challenge_method", extra: { code_challenge_method: "S512" }, error: "invalid_request" },
  ])("X-ID-PAR-2 $what is 400 $error as JSON", async ({ extra, error }) => {
    const { form } = requestOf(world.app, extra);
    const res = await push(world.app, form);
    expect(res.status, res.text).toBe(400);
    expect(res.json.error).toBe(error);
    expect(typeof res.json.error_description).toBe("string");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("X-ID-PAR-2 a public client without a code_challenge, a repeated parameter and a body that is not a form are invalid_request", async () => {
    const { form } = requestOf(world.pub);
    const { code_challenge: _, code_challenge_method: __, ...noPkce } = form;
    expect((await push(world.pub, noPkce)).json.error).toBe("invalid_request");

    const body = `${new URLSearchParams({ client_id: world.pub.clientId, ...form }).toString()}&scope=openid`;
    const repeated = await fetch(`${world.target.url}/oauth/par`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(repeated.status).toBe(400);
    expect(((await repeated.json()) as { error: string }).error).toBe("invalid_request");

    const json = await fetch(`${world.target.url}/oauth/par`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_id: world.pub.clientId, ...form }),
    });
    expect(json.status).toBe(400);
    expect(((await json.json()) as { error: string }).error).toBe("invalid_request");
  });
});

describe("X-ID-PAR-3 a request_uri is single use and expires", () => {
  it("X-ID-PAR-3 the pushed request signs the user in and its code exchanges; used again it is a 400 error page, not a redirect", async () => {
    const { requestUri, verifier } = await pushed(world.pub);
    const browser = new Browser(world.target.url);
    const location = await signIn(browser, await browser.get(byReference(world.pub.clientId, requestUri)));
    expect(location.startsWith(world.pub.redirectUri)).toBe(true);
    expect(redirectParams(location).get("state")).toBe("st-1");
    const tokens = await exchangeCode(world.target.url, { code: redirectParams(location).get("code")!, verifier } as never, world.pub);
    expect(tokens.status, tokens.text).toBe(200);

    const again = await new Browser(world.target.url).get(byReference(world.pub.clientId, requestUri));
    expect(again.status).toBe(400);
    expect(again.location).toBeUndefined();
    expect(again.headers.get("content-type")).toMatch(/^text\/html/);
  });

  it("X-ID-PAR-3 of concurrent uses of one request_uri exactly one gets the login page", async () => {
    const { requestUri } = await pushed(world.pub);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => new Browser(world.target.url).get(byReference(world.pub.clientId, requestUri))),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400)).toHaveLength(5);
  });
});

describe("X-ID-PAR-4 a request_uri is bound to its client and is the whole request", () => {
  it("X-ID-PAR-4 another client's request_uri is refused as an error page and stays usable by its own client; without client_id too", async () => {
    const { requestUri } = await pushed(world.pub);
    const foreign = await new Browser(world.target.url).get(byReference(world.other.clientId, requestUri));
    expect(foreign.status).toBe(400);
    expect(foreign.location).toBeUndefined();
    const noClient = await new Browser(world.target.url).get(`/oauth/authorize?${new URLSearchParams({ request_uri: requestUri })}`);
    expect(noClient.status).toBe(400);
    expect((await new Browser(world.target.url).get(byReference(world.pub.clientId, requestUri))).status).toBe(200);
  });

  it("X-ID-PAR-4 query parameters beside request_uri are ignored: the code goes to the pushed redirect_uri with the pushed state", async () => {
    const { requestUri } = await pushed(world.pub);
    const browser = new Browser(world.target.url);
    const page = await browser.get(
      byReference(world.pub.clientId, requestUri, { redirect_uri: "https://evil.example/steal", state: "forged", response_type: "token" }),
    );
    const location = await signIn(browser, page);
    expect(location.startsWith(`${world.pub.redirectUri}?`)).toBe(true);
    expect(redirectParams(location).get("state")).toBe("st-1");
  });
});

const required = fileWorld(() =>
  identityWorld({ env: { IDENTITY_REQUIRE_PUSHED_AUTHORIZATION_REQUESTS: "true" }, apps: { pub: { clientType: "public" } }, user: true }),
);

describe("X-ID-PAR-5 an application that requires pushed requests", () => {
  it("X-ID-PAR-5 requirePushedAuthorizationRequests refuses the application's plain requests, set at creation and by PATCH", async () => {
    const created = await createApplication(world.target, world.adminToken, {
      clientType: "public",
      requirePushedAuthorizationRequests: true,
    });
    expect(created.requirePushedAuthorizationRequests).toBe(true);
    const app: TestApp = { id: created.id, clientId: created.clientId, redirectUri: created.redirectUris[0]!, name: created.name };
    const plainRequest = () =>
      new Browser(world.target.url).get(
        authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkcePair().challenge, state: "s" }),
      );
    const plain = await plainRequest();
    expect(plain.status).toBe(302);
    expect(redirectParams(plain.location).get("error")).toBe("invalid_request");
    const { requestUri } = await pushed(app);
    expect((await new Browser(world.target.url).get(byReference(app.clientId, requestUri))).status).toBe(200);

    const patched = await world.api().PATCH("/api/applications/{appId}", {
      params: { path: { appId: app.id } },
      body: { requirePushedAuthorizationRequests: false },
    });
    expect(patched.response.status).toBe(200);
    expect(patched.data?.requirePushedAuthorizationRequests).toBe(false);
    expect((await plainRequest()).status).toBe(200);
    // Other applications were never asked to push.
    expect((await push(world.pub, requestOf(world.pub).form)).status).toBe(201);
  });
});

describe("X-ID-PAR-5 a deployment that requires pushed requests", () => {
  it("X-ID-PAR-5 refuses a plain authorization request (invalid_request redirect), accepts a pushed one, and says so in discovery", async (ctx) => {
    if (!required.target.service) return skipOnDeployment(ctx, NEEDS.configuration);
    const { challenge } = pkcePair();
    const plain = await new Browser(required.target.url).get(
      authorizationPath({ clientId: required.pub.clientId, redirectUri: required.pub.redirectUri, challenge, state: "s" }),
    );
    expect(plain.status).toBe(302);
    expect(redirectParams(plain.location).get("error")).toBe("invalid_request");
    expect(redirectParams(plain.location).get("state")).toBe("s");

    const { requestUri } = await pushed(required.pub, {}, required.target.url);
    const page = await new Browser(required.target.url).get(byReference(required.pub.clientId, requestUri));
    expect(page.status, page.text).toBe(200);

    const metadata = await new Browser(required.target.url).get("/.well-known/openid-configuration");
    expect(metadata.json.require_pushed_authorization_requests).toBe(true);
  });
});

describe("X-ID-PAR-1 an independent client (oauth4webapi)", () => {
  it("X-ID-PAR-1 X-ID-PAR-3 oauth4webapi pushes the request, then runs the code flow with PKCE to tokens", async () => {
    const insecure = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(world.target.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const client: oauth.Client = { client_id: world.app.clientId };
    const auth = oauth.ClientSecretBasic(world.app.clientSecret!);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const params = {
      redirect_uri: world.app.redirectUri,
      response_type: "code",
      scope: "openid email",
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    };
    const par = await oauth.processPushedAuthorizationResponse(
      as,
      client,
      await oauth.pushedAuthorizationRequest(as, client, auth, params, insecure),
    );
    expect(par.request_uri).toMatch(REQUEST_URI);

    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set("client_id", client.client_id);
    url.searchParams.set("request_uri", par.request_uri);
    const browser = new Browser(world.target.url);
    const location = await signIn(browser, await browser.get(url.toString()));
    const callback = oauth.validateAuthResponse(as, client, new URL(location), state);
    const answer = await oauth.authorizationCodeGrantRequest(as, client, auth, callback, world.app.redirectUri, verifier, insecure);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, answer);
    expect(tokens.token_type.toLowerCase()).toBe("bearer");
    expect(tokens.id_token).toBeTruthy();
  });
});

/** Last in the file: it freezes and moves the clock of the file's service. */
describe("X-ID-PAR-3 a request_uri expires", () => {
  it("X-ID-PAR-3 a request_uri used after expires_in seconds is a 400 error page; an unknown one too", async (ctx) => {
    const clock = world.target.clock;
    if (!clock) return skipOnDeployment(ctx, NEEDS.clock);
    // Frozen for the rest of the file: this test runs last.
    clock.freeze();
    const fresh = await pushed(world.pub);
    const stale = await pushed(world.pub);
    clock.advance(59_000);
    expect((await new Browser(world.target.url).get(byReference(world.pub.clientId, fresh.requestUri))).status).toBe(200);
    clock.advance(1_000);
    const late = await new Browser(world.target.url).get(byReference(world.pub.clientId, stale.requestUri));
    expect(late.status).toBe(400);
    expect(late.location).toBeUndefined();
    const unknown = await new Browser(world.target.url).get(
      byReference(world.pub.clientId, `urn:ietf:params:oauth:request_uri:${"A".repeat(43)}`),
    );
    expect(unknown.status).toBe(400);
  });
});
