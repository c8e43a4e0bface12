/**
 * Social sign-in (ID-SOC-1) against a REAL OpenID Connect provider: panva's `oidc-provider`,
 * started here on a free 127.0.0.1 port, with its development login and consent screens driven
 * over HTTP. The same upstream serves as a standard OIDC provider (by issuer, discovery) and as a
 * plain OAuth 2.0 provider (by endpoints and its user API).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { freePort } from "../../support/free-port.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { bearer, identityApi } from "../harness/api.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  formFields,
  pkcePair,
  redirectParams,
  tokenRequest,
  type HttpResult,
} from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment, skipOnDeployment } from "../harness/skip.ts";

let t: IdentityTarget;
let upstream: Server;
let upstreamUrl: string;
let app: TestApp;
let other: TestApp;
/** GET /oauth/userinfo with a live access token. */
const userinfo = (accessToken: string) => identityApi(t).GET("/oauth/userinfo", bearer(accessToken));
const SECRET = { oidc: "upstream-oidc-secret-0123456789abcdef", oauth2: "upstream-oauth2-secret-0123456789abcdef" };

skipFileOnDeployment(identityOnDeployment(), NEEDS.socialUpstream);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  const port = await freePort();
  upstreamUrl = `http://127.0.0.1:${port}`;
  const providers = [
    { id: "upstream", name: "Upstream ID", type: "oidc", issuer: upstreamUrl, clientId: "identity-oidc", clientSecret: SECRET.oidc },
    {
      id: "plainauth",
      name: "Plain OAuth",
      type: "oauth2",
      clientId: "identity-oauth2",
      clientSecret: SECRET.oauth2,
      authorizationEndpoint: `${upstreamUrl}/auth`,
      tokenEndpoint: `${upstreamUrl}/token`,
      userinfoEndpoint: `${upstreamUrl}/me`,
      scope: "openid email profile",
    },
  ];
  t = await identityTarget({ env: { IDENTITY_SOCIAL_PROVIDERS: JSON.stringify(providers) } });
  // Typed loosely: the package ships no declarations, and only its public constructor is used.
  const moduleName = "oidc-provider";
  const { default: Provider } = (await import(moduleName)) as {
    default: new (issuer: string, config: unknown) => { callback(): Parameters<typeof createServer>[1] };
  };
  const oidc = new Provider(upstreamUrl, {
    clients: [
      { client_id: "identity-oidc", client_secret: SECRET.oidc, redirect_uris: [`${t.url}/oauth/social/upstream/callback`] },
      { client_id: "identity-oauth2", client_secret: SECRET.oauth2, redirect_uris: [`${t.url}/oauth/social/plainauth/callback`] },
    ],
    // The development login accepts any login name: it is the account id, and here its email.
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({
        sub: id,
        email: id,
        email_verified: !id.startsWith("unverified"),
        given_name: "Social",
        family_name: "Person",
        name: "Social Person",
      }),
    }),
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "given_name", "family_name"] },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["test-cookie-key-0123456789"] },
  } as never);
  upstream = createServer(oidc.callback());
  await new Promise<void>((resolve) => upstream.listen(port, "127.0.0.1", resolve));
  app = await createApp(t, { name: "Social App", enabledProviders: ["upstream", "plainauth"] });
  other = await createApp(t, { name: "No Social", enabledProviders: [] });
});
afterAll(async () => {
  if (upstream) await new Promise((resolve) => upstream.close(resolve)); // none on a deployment
  (upstream as unknown as { closeAllConnections?: () => void })?.closeAllConnections?.();
  await t?.close();
});

const pkce = pkcePair();

/** Starts at the app's login page, clicks the provider's button, and goes through the upstream's own screens. */
async function socialFlow(provider: string, login: string): Promise<{ final: HttpResult; browser: Browser; callbackUrl: string }> {
  const b = new Browser(t.url);
  const page = await b.get(
    authorizationPath({
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      challenge: pkce.challenge,
      scope: "openid email profile",
      state: "soc",
    }),
  );
  const href = new RegExp(`href="(/oauth/social/${provider}/start\\?request_id=[^"]+)"`).exec(page.text)?.[1];
  if (!href) throw new Error(`no ${provider} button on the login page`);
  let res = await b.get(href);
  expect(res.status).toBe(302);
  let url = res.location!;
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(`${t.url}/oauth/social/`)) {
      return { final: await b.get(url), browser: b, callbackUrl: url };
    }
    res = await b.get(url);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.location!, url).toString();
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(res.text)?.[1];
    if (res.status !== 200 || !action) throw new Error(`upstream answered ${res.status}: ${res.text.slice(0, 300)}`);
    const target = new URL(action, url).toString();
    // The upstream's own form: its hidden fields, plus the login name where it asks for one.
    const form: Record<string, string> = Object.fromEntries(
      [...res.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    if (/name="login"/.test(res.text)) Object.assign(form, { login, password: "any" });
    res = await b.post(target, form);
    url = new URL(res.location!, url).toString();
  }
  throw new Error("too many hops");
}

const exchange = (code: string) =>
  tokenRequest(t.url, {
    grant_type: "authorization_code",
    code,
    redirect_uri: app.redirectUri,
    client_id: app.clientId,
    client_secret: app.clientSecret!,
    code_verifier: pkce.verifier,
  });

describe("social sign-in", () => {
  it("ID-SOC-1 sign-in through an enabled OpenID Connect provider completes the authorization (a new user is created)", async () => {
    const email = `social-${Date.now()}@upstream.example`;
    const { final, browser } = await socialFlow("upstream", email);
    expect(final.status).toBe(302);
    expect(final.location!.startsWith(app.redirectUri)).toBe(true);
    const p = redirectParams(final.location);
    expect(p.get("state")).toBe("soc");
    expect(p.get("iss")).toBe(t.url);
    expect(browser.cookies.get("identity_session")).toBeTruthy();
    const tokens = await exchange(p.get("code")!);
    expect(tokens.status).toBe(200);
    const info = await userinfo(tokens.json.access_token);
    expect(info.data).toMatchObject({ email, email_verified: true, given_name: "Social", family_name: "Person" });
  });

  it("X-ID-SOC-1 a verified upstream email does not sign in to an account someone registered with that email: the account's password is asked first", async () => {
    // The pre-registration attack: someone registers the victim's address with a password of their own.
    const existing = await createUser(t);
    const { final, browser } = await socialFlow("upstream", existing.email);
    // Asked, not linked: a page with a password form, no session, no redirect to the application.
    expect(final.status).toBe(200);
    expect(final.location).toBeUndefined();
    expect(final.headers.get("content-type")).toMatch(/^text\/html/);
    expect(final.text).toMatch(/<form method="post" action="\/oauth\/social\/link">/);
    expect(final.text).toMatch(/name="password" type="password"/);
    expect(final.text).toContain(existing.email);
    expect(browser.cookies.get("identity_session")).toBeUndefined();
    const csrf = formFields(final.text).csrfToken;

    // A wrong password: the page again (400), still nobody signed in, nothing linked.
    const wrong = await browser.post("/oauth/social/link", { csrf_token: csrf, password: "not-the-password" });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain("password is wrong");
    expect(browser.cookies.get("identity_session")).toBeUndefined();
    // A forged CSRF token, or another browser (no link cookie): 403, never a redirect.
    expect((await browser.post("/oauth/social/link", { csrf_token: "forged", password: existing.password })).status).toBe(403);
    expect((await new Browser(t.url).post("/oauth/social/link", { csrf_token: csrf, password: existing.password })).status).toBe(403);

    // The account's password proves the same person holds both: linked, signed in, back with a code.
    const linked = await browser.post("/oauth/social/link", { csrf_token: csrf, password: existing.password });
    expect(linked.status).toBe(303);
    expect(linked.location!.startsWith(app.redirectUri)).toBe(true);
    expect(browser.cookies.get("identity_session")).toBeTruthy();
    const tokens = await exchange(redirectParams(linked.location).get("code")!);
    const info = await userinfo(tokens.json.access_token);
    expect(info.data!.sub).toBe(existing.id);
    // The upstream vouched for the address and the holder of the account proved it: verified now.
    expect(info.data!.email_verified).toBe(true);
    // Used once: the same form again is refused.
    expect((await browser.post("/oauth/social/link", { csrf_token: csrf, password: existing.password })).status).toBe(403);
    // From now on this upstream identity signs in to that account directly.
    const again = await socialFlow("upstream", existing.email);
    expect(again.final.status).toBe(302);
    const tokens2 = await exchange(redirectParams(again.final.location).get("code")!);
    expect((await userinfo(tokens2.json.access_token)).data!.sub).toBe(existing.id);
  });

  it("X-ID-SOC-1 without the password the upstream identity is never linked: the victim's upstream sign-in does not reach the pre-registered account", async () => {
    const squatted = await createUser(t);
    const { final, browser } = await socialFlow("plainauth", squatted.email);
    expect(final.status).toBe(200);
    const csrf = formFields(final.text).csrfToken;
    for (let i = 0; i < 3; i++)
      expect((await browser.post("/oauth/social/link", { csrf_token: csrf, password: `guess-${i}-long-enough` })).status).toBe(400);
    expect(browser.cookies.get("identity_session")).toBeUndefined();
    // Starting the upstream sign-in again still asks: the failed attempts linked nothing.
    expect((await socialFlow("plainauth", squatted.email)).final.status).toBe(200);
    // The account's owner still signs in with the password.
    const owner = await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: squatted.email,
      password: squatted.password,
      scope: "openid email",
    });
    expect(owner.code).toBeTruthy();
  });

  it("X-ID-AZ-3 the link form counts towards the password sign-in limits with the login page: 10 failures between them lock this address out of the account on both (429, Retry-After); its owner elsewhere is not locked out", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const account = await createUser(t);
    const { final, browser } = await socialFlow("plainauth", account.email);
    expect(final.status).toBe(200);
    const csrf = formFields(final.text).csrfToken;
    const link = (password: string) => browser.post("/oauth/social/link", { csrf_token: csrf, password });
    const loginPage = async (password: string) => {
      const b = new Browser(t.url);
      const f = formFields(
        (await b.get(authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkce.challenge }))).text,
      );
      return b.post("/oauth/authorize", {
        action: "login",
        csrf_token: f.csrfToken,
        request_id: f.requestId,
        email: account.email,
        password,
      });
    };
    for (let i = 0; i < 5; i++) expect((await link(`link-guess-${i}`)).status).toBe(400);
    for (let i = 0; i < 5; i++) expect((await loginPage(`login-guess-${i}`)).status).toBe(400);
    for (const refused of [await link(account.password), await loginPage(account.password)]) {
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(60);
      expect(refused.text).toContain("to this account from your network address");
    }
    expect(browser.cookies.get("identity_session")).toBeUndefined();
    // From another address the owner is at most slowed down for a while (X-ID-AZ-4), then signs in.
    t.clock!.advance(60_000);
    const elsewhere = await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: account.email,
      password: account.password,
      scope: "openid",
      browser: new Browser(t.url, fetchFrom(freshLoopbackAddress())),
    });
    expect(elsewhere.code).toBeTruthy();
  });

  it("X-ID-SOC-1 a verified upstream email links at once to an account whose email is verified too (made by a verified upstream sign-in)", async () => {
    const email = `verified-both-${Date.now()}@upstream.example`;
    const first = await socialFlow("upstream", email);
    expect(first.final.status).toBe(302);
    const firstInfo = await userinfo((await exchange(redirectParams(first.final.location).get("code")!)).json.access_token);
    expect(firstInfo.data!.email_verified).toBe(true);
    // Another provider, the same verified address: the same account, no page.
    const second = await socialFlow("plainauth", email);
    expect(second.final.status).toBe(302);
    const secondInfo = await userinfo((await exchange(redirectParams(second.final.location).get("code")!)).json.access_token);
    expect(secondInfo.data!.sub).toBe(firstInfo.data!.sub);
  });

  it("X-ID-SOC-1 an unverified upstream email that belongs to an account with a password asks for that password too; nobody is signed in before", async (ctx) => {
    if (!t.service) return skipOnDeployment(ctx, NEEDS.service);
    const email = `unverified-owner-${Date.now()}@example.com`;
    const owner = await t.service!.deps.accounts.registerUser({ email, password: "long enough pw", firstName: "A", lastName: "B" });
    const { final, browser } = await socialFlow("upstream", email);
    expect(final.status).toBe(200);
    expect(final.text).toContain("/oauth/social/link");
    expect(browser.cookies.get("identity_session")).toBeUndefined();
    const linked = await browser.post("/oauth/social/link", { csrf_token: formFields(final.text).csrfToken, password: "long enough pw" });
    expect(linked.status).toBe(303);
    const info = await userinfo((await exchange(redirectParams(linked.location).get("code")!)).json.access_token);
    expect(info.data!.sub).toBe(owner.id);
    // Nobody vouched for the address: it stays unverified.
    expect(info.data!.email_verified).toBe(false);
    // An unverified email that is new still signs up.
    expect((await socialFlow("upstream", `unverified-new-${Date.now()}@example.com`)).final.status).toBe(302);
  });

  it("X-ID-SOC-1 an account with no password and an unverified email cannot be proven: the 400 page, nobody signed in, nothing linked", async () => {
    // Made by an upstream sign-in whose email was not verified: no password, unverified.
    const email = `unverified-social-${Date.now()}@example.com`;
    expect((await socialFlow("upstream", email)).final.status).toBe(302);
    const { final, browser } = await socialFlow("plainauth", email);
    expect(final.status).toBe(400);
    expect(final.headers.get("content-type")).toMatch(/^text\/html/);
    expect(final.text).not.toContain("/oauth/social/link");
    expect(browser.cookies.get("identity_session")).toBeUndefined();
  });

  it("X-ID-SOC-2 an upstream email that registration would refuse (a@b, markup, an IP address, too long) makes no account: the 400 page, nobody signed in", async () => {
    const refused = [
      "a@b",
      "<script>alert(1)</script>@x.example",
      "a@127.0.0.1",
      "a b@x.example",
      `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.example`,
    ];
    for (const provider of ["upstream", "plainauth"]) {
      for (const email of refused) {
        const { final, browser } = await socialFlow(provider, email);
        expect(final.status, `${provider} ${email}`).toBe(400);
        expect(final.headers.get("content-type")).toMatch(/^text\/html/);
        expect(final.text).toContain("did not share an email address");
        expect(final.text).not.toContain("<script>alert");
        expect(browser.cookies.get("identity_session"), `${provider} ${email}`).toBeUndefined();
      }
    }
    // The same addresses cannot register through the API either: one rule for both paths.
    for (const email of refused) {
      const res = await identityApi(t).POST("/api/users", {
        body: { clientId: app.clientId, email, password: "correct horse battery staple", firstName: "A", lastName: "B" },
      });
      expect(res.response.status, email).toBe(400);
    }
  });

  it("ID-SOC-1 a plain OAuth 2.0 provider (by endpoints and user API) completes the authorization too", async () => {
    const email = `plain-${Date.now()}@upstream.example`;
    const { final } = await socialFlow("plainauth", email);
    expect(final.status).toBe(302);
    const tokens = await exchange(redirectParams(final.location).get("code")!);
    expect(tokens.status).toBe(200);
    const info = await userinfo(tokens.json.access_token);
    expect(info.data!.email).toBe(email);
  });

  it("ID-SOC-1 a callback with a wrong or missing state, or replayed, is a 400 page and signs nobody in", async () => {
    const b = new Browser(t.url);
    for (const path of ["/oauth/social/upstream/callback?code=abc&state=forged", "/oauth/social/upstream/callback?code=abc"]) {
      const res = await b.get(path);
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(b.cookies.get("identity_session")).toBeUndefined();
    }
    // The real callback URL, replayed in the same browser after it was used: the state is single use.
    const { final, browser, callbackUrl } = await socialFlow("upstream", `replay-${Date.now()}@upstream.example`);
    expect(final.status).toBe(302);
    browser.cookies.set("identity_social", new URL(callbackUrl).searchParams.get("state")!);
    expect((await browser.get(callbackUrl)).status).toBe(400);
  });

  it("ID-SOC-1 a provider not enabled for the application, or unknown, is a 400 page and no button", async () => {
    const b = new Browser(t.url);
    const page = await b.get(authorizationPath({ clientId: other.clientId, redirectUri: other.redirectUri, challenge: pkce.challenge }));
    expect(page.text).not.toContain("/oauth/social/");
    const requestId = formFields(page.text).requestId;
    expect((await b.get(`/oauth/social/upstream/start?request_id=${requestId}`)).status).toBe(400);
    expect((await b.get(`/oauth/social/nosuch/start?request_id=${requestId}`)).status).toBe(400);
    expect((await b.get(`/oauth/social/BAD!/start?request_id=${requestId}`)).status).toBe(400);
  });
});
