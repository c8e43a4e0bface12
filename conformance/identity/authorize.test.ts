/** The authorization endpoint: ID-AZ-1…9, X-ID-AZ-1, X-ID-AZ-3, X-ID-APP-1 (matching), CSRF and page headers. */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { identityTarget } from "../harness/targets.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { createApp, createUser } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  exchangeCode,
  formFields,
  pkcePair,
  redirectParams,
  loginForm,
} from "../harness/oauth-flow.ts";

const PROVIDERS = JSON.stringify([
  {
    id: "github",
    name: "GitHub",
    type: "oauth2",
    clientId: "gh",
    clientSecret: "gh-secret",
    authorizationEndpoint: "https://github.example/authorize",
    tokenEndpoint: "https://github.example/token",
    userinfoEndpoint: "https://github.example/user",
    scope: "read:user",
  },
  { id: "google", name: "Google", type: "oidc", clientId: "go", clientSecret: "go-secret", issuer: "https://accounts.google.example" },
]);

const world = fileWorld(() =>
  identityWorld({
    env: { IDENTITY_SOCIAL_PROVIDERS: PROVIDERS, LOGIN_MAX_FAILURES: "3" },
    apps: {
      app: (target) => ({
        name: "Acme Notes",
        allowedScopes: ["openid", "profile", "email"],
        // A deployment has its own providers (or none): the suite's github is configured in-process only.
        enabledProviders: target.external ? [] : ["github"],
        branding: { logoUrl: "https://notes.acme.example/logo.png", primaryColor: "#AA3300", secondaryColor: "#00FF7f" },
      }),
    },
    user: true,
  }),
);

const pkce = pkcePair();
const authorize = (over: Partial<Parameters<typeof authorizationPath>[0]> = {}, browser = new Browser(world.target.url)) =>
  browser.get(
    authorizationPath({
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      scope: "openid profile",
      state: "s-1",
      challenge: pkce.challenge,
      ...over,
    }),
  );

const expectErrorPage = (res: { status: number; headers: Headers; location: string | undefined }) => {
  expect(res.status).toBe(400);
  expect(res.location).toBeUndefined();
  expect(res.headers.get("content-type")).toMatch(/^text\/html/);
};

const expectErrorRedirect = (res: { status: number; location: string | undefined }, error: string, state: string | null = "s-1") => {
  expect(res.status).toBe(302);
  expect(res.location!.startsWith(world.app.redirectUri)).toBe(true);
  const p = redirectParams(res.location);
  expect(p.get("error")).toBe(error);
  expect(p.get("error_description")).toBeTruthy();
  expect(p.get("state")).toBe(state);
  expect(p.get("iss")).toBe(world.target.url);
  expect(p.get("code")).toBeNull();
};

describe("request validation", () => {
  it("ID-AZ-1 a missing or unknown client_id or a missing redirect_uri is an error page; a missing response_type an error redirect", async () => {
    const b = new Browser(world.target.url);
    expectErrorPage(await b.get(`/oauth/authorize?redirect_uri=${encodeURIComponent(world.app.redirectUri)}&response_type=code`));
    expectErrorPage(await authorize({ clientId: "no-such-client" }));
    expectErrorPage(await b.get(`/oauth/authorize?client_id=${world.app.clientId}&response_type=code`));
    const res = await b.get(
      `/oauth/authorize?client_id=${world.app.clientId}&redirect_uri=${encodeURIComponent(world.app.redirectUri)}&state=s-1&code_challenge=${pkce.challenge}`,
    );
    expectErrorRedirect(res, "invalid_request");
  });

  it("ID-AZ-2 a redirect_uri that is not exactly a registered one shows an error page and never redirects", async () => {
    for (const uri of [
      `${world.app.redirectUri}/`,
      `${world.app.redirectUri}?x=1`,
      world.app.redirectUri.toUpperCase(),
      "https://evil.example/callback",
      world.app.redirectUri.replace("https", "http"),
    ]) {
      expectErrorPage(await authorize({ redirectUri: uri }));
    }
  });

  it("X-ID-APP-1 a loopback redirect URI matches on any port, with the path still exact", async () => {
    const native = await createApp(world.target, { clientType: "public", redirectUris: ["http://127.0.0.1/callback"] });
    const ok = await new Browser(world.target.url).get(
      authorizationPath({ clientId: native.clientId, redirectUri: "http://127.0.0.1:49152/callback", challenge: pkce.challenge }),
    );
    expect(ok.status).toBe(200);
    expectErrorPage(
      await new Browser(world.target.url).get(
        authorizationPath({ clientId: native.clientId, redirectUri: "http://127.0.0.1:49152/other", challenge: pkce.challenge }),
      ),
    );
    expectErrorPage(
      await new Browser(world.target.url).get(
        authorizationPath({ clientId: native.clientId, redirectUri: "http://127.0.0.2:49152/callback", challenge: pkce.challenge }),
      ),
    );
  });

  it("ID-AZ-3 a response_type other than code redirects with unsupported_response_type", async () => {
    expectErrorRedirect(await authorize({ responseType: "token" }), "unsupported_response_type");
    expectErrorRedirect(await authorize({ responseType: "code id_token" }), "unsupported_response_type");
  });

  it("ID-AZ-4 a scope not allowed for the application redirects with invalid_scope", async () => {
    expectErrorRedirect(await authorize({ scope: "openid offline_access" }), "invalid_scope");
    expectErrorRedirect(await authorize({ scope: "openid admin" }), "invalid_scope");
  });

  it("ID-AZ-5 state comes back unchanged on error redirects and with the code", async () => {
    const state = "a b+c/d=e&f?g~ü";
    expectErrorRedirect(await authorize({ state, responseType: "token" }), "unsupported_response_type", state);
    const flow = await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      email: world.user.email,
      password: world.user.password,
      state,
      scope: "openid",
    });
    expect(flow.state).toBe(state);
  });

  it("ID-AZ-6 code_challenge_method is S256 by default, plain is accepted, anything else is invalid_request", async () => {
    expect((await authorize({})).status).toBe(200); // no method: S256
    expect((await authorize({ method: "S256" })).status).toBe(200);
    expect((await authorize({ method: "plain", challenge: pkce.verifier })).status).toBe(200);
    expectErrorRedirect(await authorize({ method: "S512" }), "invalid_request");
    expectErrorRedirect(await authorize({ method: "s256" }), "invalid_request");
    // Default S256: the verifier's hash must match at the token endpoint.
    const flow = await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      email: world.user.email,
      password: world.user.password,
      scope: "openid",
    });
    const res = await exchangeCode(world.target.url, flow, world.app);
    expect(res.status).toBe(200);
  });

  it("X-ID-AZ-1 every redirectable error carries iss (RFC 9207); a repeated parameter is invalid_request, a repeated client_id the error page", async () => {
    expectErrorRedirect(await authorize({ extra: { scope: "email" } }), "invalid_request");
    expectErrorRedirect(await authorize({ extra: { response_type: "code" } }), "invalid_request");
    expectErrorPage(await authorize({ extra: { client_id: world.app.clientId } }));
    expectErrorRedirect(await authorize({ prompt: "none" }), "login_required");
    expectErrorRedirect(await authorize({ challenge: "too-short" }), "invalid_request");
    expectErrorRedirect(await authorize({ method: "S256", challenge: undefined }), "invalid_request");
  });
});

describe("the hosted login page", () => {
  it("ID-AZ-7 shows the application's name, logo, colours, the requested scopes in words, email/password sign-in, sign-up, and only the enabled providers", async (ctx) => {
    if (world.target.external) return skipOnDeployment(ctx, NEEDS.providers);
    const res = await authorize({ scope: "openid profile email" });
    expect(res.status).toBe(200);
    const html = res.text;
    expect(html).toContain("Acme Notes");
    expect(html).toContain('src="https://notes.acme.example/logo.png"');
    expect(html).toContain("#AA3300");
    expect(html).toContain("#00FF7f");
    expect(html).toContain("See your name");
    expect(html).toContain("See your email address");
    expect(html).toMatch(/<label for="email">/);
    expect(html).toMatch(/<input id="email" name="email" type="email"/);
    expect(html).toMatch(/<label for="password">/);
    expect(html).toMatch(/<input id="password" name="password" type="password"/);
    expect(html).toMatch(/href="\/signup\?request_id=[0-9a-f-]{36}"/);
    expect(html).toContain("Continue with GitHub");
    expect(html).toContain("/oauth/social/github/start?request_id=");
    expect(html).not.toContain("Google"); // configured, but not enabled for this application
    expect(html).toMatch(/name="action" value="deny"/);
    expect(html).toContain('name="viewport"');
  });

  it("ID-AZ-7 a page without branding falls back to defaults and shows no logo", async () => {
    const plain = await createApp(world.target, { name: "Plain App" });
    const res = await new Browser(world.target.url).get(
      authorizationPath({ clientId: plain.clientId, redirectUri: plain.redirectUri, challenge: pkce.challenge }),
    );
    expect(res.status).toBe(200);
    expect(res.text).toContain("Plain App");
    expect(res.text).not.toContain("<img");
    expect(res.text).not.toContain("Continue with");
  });

  it("X-ID-AZ-1 hosted pages send CSP frame-ancestors 'none', X-Frame-Options DENY, Referrer-Policy no-referrer, Cache-Control no-store and a CSRF token in every form", async () => {
    for (const res of [await authorize({}), await authorize({ clientId: "no-such-client" })]) {
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    const html = (await authorize({})).text;
    const forms = html.split("<form").slice(1);
    expect(forms.length).toBeGreaterThanOrEqual(2);
    for (const f of forms) expect(f).toMatch(/name="csrf_token" value="[A-Za-z0-9_-]{43}"/);
  });
});

describe("submitting the page", () => {
  it("ID-AZ-8 after the user signs in, POST /oauth/authorize answers 303 to redirect_uri with code, state and iss", async () => {
    const b = new Browser(world.target.url);
    const page = await authorize({}, b);
    const f = formFields(page.text);
    const res = await b.post("/oauth/authorize", loginForm(f, world.user));
    expect(res.status).toBe(303);
    expect(res.location!.startsWith(`${world.app.redirectUri}?`)).toBe(true);
    const p = redirectParams(res.location);
    expect(p.get("code")!.length).toBeGreaterThanOrEqual(43); // ≥ 256 bits, base64url
    expect(p.get("state")).toBe("s-1");
    expect(p.get("iss")).toBe(world.target.url);
  });

  it("ID-AZ-9 a user who denies access is redirected with error=access_denied, error_description and state", async () => {
    const b = new Browser(world.target.url);
    const f = formFields((await authorize({}, b)).text);
    const res = await b.post("/oauth/authorize", { action: "deny", csrf_token: f.csrfToken, request_id: f.requestId });
    expect(res.status).toBe(303);
    const p = redirectParams(res.location);
    expect(p.get("error")).toBe("access_denied");
    expect(p.get("error_description")).toBeTruthy();
    expect(p.get("state")).toBe("s-1");
    expect(p.get("iss")).toBe(world.target.url);
    // The request is finished: submitting it again is refused.
    const again = await b.post("/oauth/authorize", { action: "deny", csrf_token: f.csrfToken, request_id: f.requestId });
    expect(again.status).toBe(403);
  });

  it("X-ID-AZ-1 a form without the right CSRF token, from another browser, or for an unknown request is a 403 page, never a redirect", async () => {
    const b = new Browser(world.target.url);
    const f = formFields((await authorize({}, b)).text);
    const login = { action: "login", request_id: f.requestId, email: world.user.email, password: world.user.password };
    for (const res of [
      await b.post("/oauth/authorize", { ...login, csrf_token: "forged" }),
      await b.post("/oauth/authorize", login as Record<string, string>),
      await new Browser(world.target.url).post("/oauth/authorize", { ...login, csrf_token: f.csrfToken }),
      await b.post("/oauth/authorize", { ...login, csrf_token: f.csrfToken, request_id: "00000000-0000-4000-8000-000000000000" }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.location).toBeUndefined();
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    }
  });

  it("X-ID-AZ-1 a wrong password re-renders the page with 400 and the same words as an unknown email; an incomplete form too", async () => {
    const b = new Browser(world.target.url);
    const f = formFields((await authorize({}, b)).text);
    const wrong = await b.post("/oauth/authorize", {
      action: "login",
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email: world.user.email,
      password: "wrong-password",
    });
    const unknown = await b.post("/oauth/authorize", {
      action: "login",
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email: "nobody@example.com",
      password: "wrong-password",
    });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(400);
      expect(res.text).toContain("The email or password is wrong.");
    }
    const incomplete = await b.post("/oauth/authorize", {
      action: "login",
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email: world.user.email,
    });
    expect(incomplete.status).toBe(400);
    expect(incomplete.headers.get("content-type")).toMatch(/^text\/html/);
  });

  it("X-ID-AZ-1 a pending request expires after 10 minutes", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const b = new Browser(world.target.url);
    const f = formFields((await authorize({}, b)).text);
    world.target.clock!.advance(10 * 60_000 + 1000);
    const res = await b.post("/oauth/authorize", loginForm(f, world.user));
    expect(res.status).toBe(403);
  });
});

describe("brute force", () => {
  it("X-ID-AZ-3 after too many failures for one account from one client address, that address is refused for that account (429, Retry-After, a message) until the window passes; it may still sign in to other accounts", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const victim = await createUser(world.target);
    const other = await createUser(world.target);
    const address = freshLoopbackAddress();
    const b = new Browser(world.target.url, fetchFrom(address));
    const f = formFields((await authorize({}, b)).text);
    const attempt = (who: { email: string }, password: string) =>
      b.post("/oauth/authorize", { action: "login", csrf_token: f.csrfToken, request_id: f.requestId, email: who.email, password });
    for (let i = 0; i < 3; i++) expect((await attempt(victim, "wrong")).status).toBe(400);
    const locked = await attempt(victim, victim.password); // even the right password
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(Number(locked.headers.get("retry-after"))).toBeLessThanOrEqual(900);
    expect(locked.text).toMatch(/Try again in \d+ minute/);
    expect(locked.text).toContain("to this account from your network address");
    // The lock is this address's, for this account only.
    expect((await attempt(other, other.password)).status).toBe(303);
    world.target.clock!.advance(15 * 60_000 + 1000);
    const later = new Browser(world.target.url, fetchFrom(address)); // signed out: b is signed in as `other` now
    const f2 = formFields((await authorize({}, later)).text);
    const ok = await later.post("/oauth/authorize", loginForm(f2, victim));
    expect(ok.status).toBe(303);
  });

  it("X-ID-AZ-3 one client address failing across many accounts is refused too (LOGIN_ADDRESS_MAX_FAILURES), and only that address", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.configuration);
    // A separate service: the per-address count must not be shared with the other tests.
    const own = await identityTarget({ env: { LOGIN_MAX_FAILURES: "2", LOGIN_ADDRESS_MAX_FAILURES: "20" } });
    try {
      const a = await createApp(own);
      const somebody = await createUser(own);
      const path = authorizationPath({ clientId: a.clientId, redirectUri: a.redirectUri, challenge: pkce.challenge });
      const b = new Browser(own.url);
      const f = formFields((await b.get(path)).text);
      for (let i = 0; i < 20; i++) {
        const res = await b.post("/oauth/authorize", {
          action: "login",
          csrf_token: f.csrfToken,
          request_id: f.requestId,
          email: `spray-${i}@example.com`,
          password: "guess",
        });
        expect(res.status).toBe(400);
      }
      const locked = await b.post("/oauth/authorize", loginForm(f, somebody));
      expect(locked.status).toBe(429);
      expect(locked.text).toContain("from your network address");
      expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(60);
      // Another client address is not affected.
      const elsewhere = new Browser(own.url, fetchFrom(freshLoopbackAddress()));
      const g = formFields((await elsewhere.get(path)).text);
      const ok = await elsewhere.post("/oauth/authorize", loginForm(g, somebody));
      expect(ok.status).toBe(303);
    } finally {
      await own.close();
    }
    // A service of its own and 21 password hashes (scrypt, 32 MiB each): slower than most tests on a busy machine.
  }, 90_000);
});
