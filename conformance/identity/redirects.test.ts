/**
 * Where the service sends a browser, built from what a client sent: X-ID-APP-1 (a redirect URI
 * that is not a valid URL is the error page, at authorization and at registration), X-ID-SESS-2
 * (sign-out's `return_to` stays on this origin, after the URL parser's own normalisation) and
 * X-ID-ADM-1 (the first-party dashboard client redirects only to its own callback).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IdentityApi } from "../harness/api.ts";
import { identityWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import { applicationBody, createApplication, newApplication, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  Browser,
  DASHBOARD_CLIENT_ID,
  formFields,
  pkcePair,
  redirectParams,
  dashboardTokensViaFlow,
  loginForm,
} from "../harness/oauth-flow.ts";
import type { IdentityTarget } from "../harness/targets.ts";

let t: IdentityTarget;
let native: TestApp;
let web: TestApp;
let user: { email: string; password: string };
let token: string;
/** Typed clients: the admin's token by default. */
let api: (token?: string) => IdentityApi;
beforeAll(async () => {
  ({
    target: t,
    native,
    web,
    user,
    adminToken: token,
    api,
  } = await identityWorld({
    apps: {
      native: { clientType: "public", redirectUris: ["http://127.0.0.1/callback", "http://[::1]/callback", "http://localhost/callback"] },
      web: {},
    },
    user: true,
    admin: true,
  }));
});
afterAll(async () => t?.close());

const pkce = pkcePair();
const authorize = (b: Browser, a: TestApp, redirectUri: string, over: Record<string, string> = {}) =>
  b.get(authorizationPath({ clientId: a.clientId, redirectUri, challenge: pkce.challenge, scope: "openid", state: "s-1", ...over }));

/** The documented answer to a redirect URI that cannot be used: the 400 HTML page, no Location, no form (nothing pending). */
function expectErrorPage(res: { status: number; headers: Headers; location: string | undefined; text: string }, what: string) {
  expect(res.status, what).toBe(400);
  expect(res.location, what).toBeUndefined();
  expect(res.headers.get("content-type"), what).toMatch(/^text\/html/);
  expect(res.text, what).not.toContain('name="request_id"');
}

/** A browser signed in through `web` (single sign-on session), so an authorization can finish without a page. */
async function signedIn(): Promise<Browser> {
  const b = new Browser(t.url);
  const f = formFields((await authorize(b, web, web.redirectUri)).text);
  const res = await b.post("/oauth/authorize", loginForm(f, user));
  expect(res.status).toBe(303);
  return b;
}

const INVALID_LOOPBACK = [
  "http://127.0.0.1:99999/callback",
  "http://127.0.0.1:65536/callback",
  "http://[::1]:65536/callback",
  "http://localhost:99999/callback",
  "http://127.0.0.1:0/callback",
  "http://localhost:0/callback",
];

describe("X-ID-APP-1 redirect URIs that are not valid URLs", () => {
  it("X-ID-APP-1 a loopback redirect_uri with a port outside 1-65535 is the 400 error page, never a 500 and never a redirect", async () => {
    for (const uri of INVALID_LOOPBACK) expectErrorPage(await authorize(new Browser(t.url), native, uri), uri);
    // Still fine: a valid port, and the registered port-less form.
    expect((await authorize(new Browser(t.url), native, "http://127.0.0.1:65535/callback")).status).toBe(200);
    expect((await authorize(new Browser(t.url), native, "http://127.0.0.1:1/callback")).status).toBe(200);
  });

  it("X-ID-APP-1 with a signed-in session (single sign-on), prompt=none or an error to report, an invalid redirect_uri is still the error page: no code is issued", async () => {
    const b = await signedIn();
    // The native app was never consented to; the web app was: both paths must stop at the page.
    for (const uri of INVALID_LOOPBACK) {
      expectErrorPage(await authorize(b, native, uri), uri);
      expectErrorPage(await authorize(b, native, uri, { prompt: "none" }), `${uri} prompt=none`);
      expectErrorPage(await authorize(b, native, uri, { response_type: "token" }), `${uri} response_type=token`);
    }
    // The session is intact: a valid loopback port goes on to the consent page.
    const ok = await authorize(b, native, "http://127.0.0.1:8080/callback");
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('value="consent"');
  });

  it("X-ID-APP-1 after signing in on the page with a valid port, the code comes back to that port (the loopback rule still works end to end)", async () => {
    const b = new Browser(t.url);
    const f = formFields((await authorize(b, native, "http://[::1]:49152/callback")).text);
    const res = await b.post("/oauth/authorize", loginForm(f, user));
    expect(res.status).toBe(303);
    expect(res.location!.startsWith("http://[::1]:49152/callback?")).toBe(true);
    expect(redirectParams(res.location).get("code")).toBeTruthy();
  });

  it("X-ID-APP-1 registration and update refuse a redirect URI with a port outside 1-65535 with 400 naming the field", async () => {
    for (const uri of [
      "http://127.0.0.1:99999/callback",
      "http://localhost:65536/cb",
      "https://app.example.com:70000/cb",
      "http://[::1]:0/cb",
      "https://app.example.com:0/cb",
    ]) {
      // A port outside 1-65535 is not a URI the contract accepts: raw.
      const res = await request(t.url, "POST", "/api/applications", {
        token,
        json: applicationBody({ redirectUris: ["https://ok.example.com/cb", uri] }),
      });
      expect(res.status, uri).toBe(400);
      expect(res.body.code, uri).toBe("validation_failed");
      expect(
        res.body.errors.map((e: { field: string }) => e.field),
        uri,
      ).toContain("body.redirectUris[1]");
    }
    const app = await createApplication(t, token);
    const patched = await request(t.url, "PATCH", `/api/applications/${app.id}`, {
      token,
      json: { redirectUris: ["http://127.0.0.1:99999/callback"] },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.errors[0].field).toBe("body.redirectUris[0]");
    const got = await api().GET("/api/applications/{appId}", { params: { path: { appId: app.id } } });
    expect(got.data!.redirectUris).toEqual(app.redirectUris);
    // The edges of the range are fine.
    const edges = await api().POST("/api/applications", {
      body: newApplication({ redirectUris: ["http://127.0.0.1:65535/cb", "https://app.example.com:1/cb"] }),
    });
    expect(edges.response.status).toBe(201);
  });
});

describe("X-ID-SESS-2 where sign-out sends the browser", () => {
  /** Signs in, then posts the sign-out form with `return_to`. */
  async function logout(returnTo: string) {
    const b = await signedIn();
    const csrf = formFields((await b.get("/logout")).text).csrfToken;
    const res = await b.post("/logout", { csrf_token: csrf, return_to: returnTo });
    return { res, b };
  }

  it("X-ID-SESS-2 a return_to that the URL parser resolves to another origin is refused with the 400 page, and the session is not ended", async () => {
    for (const evil of [
      "/\t/evil.example/",
      "/\n/evil.example/",
      "/\r\n/evil.example",
      "/\\evil.example",
      "/\t\\evil.example",
      "/\\/evil.example",
    ]) {
      const { res, b } = await logout(evil);
      expect(res.status, JSON.stringify(evil)).toBe(400);
      expect(res.location, JSON.stringify(evil)).toBeUndefined();
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      // Nothing happened: still signed in.
      expect((await b.get("/logout")).text, JSON.stringify(evil)).toContain(user.email);
    }
  });

  it("X-ID-SESS-2 every answer to a return_to is a 303 to this origin or the 400 page: never a 500, never a Location a browser takes elsewhere", async () => {
    const origin = new URL(t.url).origin;
    const values = [
      "/\t/evil.example/",
      "/evil\nSet-Cookie: x=1",
      "/%09/evil.example",
      "/%2F%2Fevil.example",
      "/.//evil.example",
      "/..//evil.example",
      "/a/../..//evil.example",
      "///evil.example",
      "//evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
      "/\u2028/evil.example",
      "/\u0085/evil.example",
      "/\u00a0/evil.example",
      "/ok?next=//evil.example#frag",
    ];
    for (const value of values) {
      const { res } = await logout(value);
      const what = JSON.stringify(value);
      expect([303, 400], what).toContain(res.status);
      if (res.status === 303) {
        const location = res.location!;
        expect(location, what).not.toMatch(/[\u0000-\u0020\u007f-\u00a0\\]/);
        expect(new URL(location, "https://other.example/").origin, what).toBe(origin);
      }
    }
  });

  it("X-ID-SESS-2 a path on this server is followed, normalised by the URL parser and absolute; the sign-out page's own 'Not you?' form still works", async () => {
    const origin = new URL(t.url).origin;
    const { res, b } = await logout("/oauth/authorize?client_id=x&a=%20b");
    expect(res.status).toBe(303);
    expect(res.location).toBe(`${origin}/oauth/authorize?client_id=x&a=%20b`);
    expect((await b.get("/logout")).text).toContain("You are signed out");
    const dotted = await logout("/a/./b/../logout");
    expect(dotted.res.location).toBe(`${origin}/a/logout`);
    // The consent page's "Not you? Sign out" posts return_to=/signup?request_id=… (a path on this server).
    const c = await signedIn();
    const consent = await authorize(c, native, "http://127.0.0.1:8080/callback", { prompt: "consent" });
    const notYou = /<form method="post" action="\/logout">[\s\S]*?name="return_to" value="([^"]+)"/.exec(consent.text)?.[1];
    expect(notYou).toMatch(/^\/signup\?request_id=/);
    const out = await c.post("/logout", { csrf_token: formFields(consent.text).csrfToken, return_to: notYou! });
    expect(out.status).toBe(303);
    expect(new URL(out.location!).pathname).toBe("/signup");
    expect((await c.get(out.location!)).status).toBe(200);
  });
});

describe("X-ID-ADM-1 the first-party dashboard client's redirect URI", () => {
  const dashboard = (b: Browser, redirectUri: string) =>
    b.get(
      authorizationPath({
        clientId: DASHBOARD_CLIENT_ID,
        redirectUri,
        challenge: pkce.challenge,
        scope: "openid profile email offline_access",
        state: "d",
      }),
    );

  it("X-ID-ADM-1 the dashboard client redirects only to this service's own /dashboard: loopback URIs on any port are the error page", async () => {
    const own = new URL(t.url);
    const port = Number(own.port);
    const other = port === 65535 ? port - 1 : port + 1;
    expect((await dashboard(new Browser(t.url), `${t.url}/dashboard`)).status).toBe(200);
    for (const uri of [
      "http://127.0.0.1:53682/callback",
      "http://127.0.0.1/callback",
      "http://localhost:53682/callback",
      "http://localhost/callback",
      "http://[::1]:53682/callback",
      `http://127.0.0.1:${other}/dashboard`, // the service's own loopback callback, on another port: another process
      `http://localhost:${port}/dashboard`,
      `${t.url}/dashboard/`,
      `${t.url}/dashboard?x=1`,
    ]) {
      expectErrorPage(await dashboard(new Browser(t.url), uri), uri);
    }
  });

  it("X-ID-ADM-1 a signed-in admin is never sent (without a prompt) to a local process: no code for a loopback redirect URI", async () => {
    const b = await signedIn();
    // Through the real callback the first-party client skips consent (X-ID-AZ-2): the code comes back at once.
    const ok = await dashboard(b, `${t.url}/dashboard`);
    expect(ok.status).toBe(302);
    expect(ok.location!.startsWith(`${t.url}/dashboard?`)).toBe(true);
    expect(redirectParams(ok.location).get("code")).toBeTruthy();
    for (const uri of ["http://127.0.0.1:53682/callback", "http://localhost:1234/callback"]) {
      const res = await dashboard(b, uri);
      expectErrorPage(res, uri);
    }
  });
});

describe("X-ID-DOC-2 signing in to the admin API from a tool (AdminAuth)", () => {
  it("X-ID-DOC-2 a tool signs in as identity-dashboard with the exact redirect URI <issuer>/dashboard and PKCE S256, and its token calls the admin API", async () => {
    // What Postman and Insomnia do: their own sign-in window follows the flow and stops at the
    // callback URL, taking the code from it; the page behind it is never loaded.
    const organization = await t.createOrganization!();
    const tokens = await dashboardTokensViaFlow(t, organization.admin);
    const res = await api(tokens.access_token).GET("/api/applications");
    expect(res.response.status).toBe(200);
  });

  it("X-ID-DOC-2 no other redirect URI is registered for the admin API's client: the API reference's and near misses are the error page", async () => {
    for (const uri of [
      `${t.url}/docs/oauth2-redirect`, // the reference (Redoc) cannot run the flow, so nothing is registered for it
      `${t.url}/docs`,
      `${t.url}/DASHBOARD`,
      `${t.url}/dashboard#x`,
      `${t.url}/dashboard/../docs`,
      "https://oauth.pstmn.io/v1/callback", // Postman's hosted callback: tools use <issuer>/dashboard instead
    ]) {
      const res = await new Browser(t.url).get(
        authorizationPath({
          clientId: DASHBOARD_CLIENT_ID,
          redirectUri: uri,
          challenge: pkce.challenge,
          scope: "openid profile email",
          state: "t",
        }),
      );
      expectErrorPage(res, uri);
    }
  });
});
