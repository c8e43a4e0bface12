/**
 * CORS in a real browser (X-ID-CORS-1, X-ID-CORS-2): Debian's Chromium, the real identity
 * service, and a single-page app (test/support/browser/spa.js, with oauth4webapi) served from other
 * origins: two static servers on their own 127.0.0.1 ports. The application is a public client
 * with a redirect URI on each origin; the admin lists only the first origin in the dashboard's
 * form. From that origin the page completes Authorization Code + PKCE, calling the token endpoint
 * and UserInfo itself; the same page from the other origin gets its code but the browser refuses
 * the token endpoint's answer, and UserInfo's preflight, so its fetches reject.
 *
 * The steps build on one another (one browser session), so they run in order. Waits are on URLs
 * and page text, never on time.
 */
import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { request } from "../../conformance/harness/http.ts";
import { registerUser } from "../../conformance/harness/identity-fixtures.ts";
import { adminTokenViaFlow, authorizeWithPassword } from "../../conformance/harness/oauth-flow.ts";
import { identityTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { startSpaServer, type SpaServer } from "../support/browser/spa-server.ts";

const SHOTS = ".tmp";
const ORG_NAME = "Acme CORS Test";
const APP_NAME = "Notes SPA (CORS test)";

let target: IdentityTarget;
let browser: Browser;
let listed: SpaServer;
let unlisted: SpaServer;
let admin: { email: string; password: string };
let adminToken = "";
let app: { id: string; clientId: string };
let user: { email: string; password: string };
let userContext: BrowserContext;

const onIdentity = (path: string) => (u: URL) => u.origin === target.url && u.pathname === path;
const status = (page: Page) => page.locator("#status");

/** The page's own fetch, run in the page (its origin): "ok <status>" or how it was rejected. */
async function fetchFromPage(page: Page, url: string, init: { headers?: Record<string, string> } = {}): Promise<string> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        return `ok ${(await fetch(url, init)).status}`;
      } catch (err) {
        return `rejected: ${String(err)}`;
      }
    },
    { url, init },
  );
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [browser, target, listed, unlisted] = await Promise.all([
    launchChromium(chromiumPath()),
    identityTarget(),
    startSpaServer(),
    startSpaServer(),
  ]);
  if (!target.createOrganization)
    throw new Error("the browser test needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  const organization = await target.createOrganization(ORG_NAME);
  admin = organization.admin;
  adminToken = await adminTokenViaFlow(target, admin);
  const created = await request(target.url, "POST", "/api/applications", {
    token: adminToken,
    json: {
      name: APP_NAME,
      clientType: "public",
      redirectUris: [`${listed.origin}/callback`, `${unlisted.origin}/callback`],
      allowedScopes: ["openid", "email"],
    },
  });
  expect(created.status, created.text).toBe(201);
  app = created.body;
  for (const spa of [listed, unlisted]) spa.configure({ issuer: target.url, clientId: app.clientId });
  user = await registerUser(target, app.clientId);
  userContext = await browser.newContext();
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([userContext?.close()]);
  await Promise.allSettled([browser?.close(), listed?.close(), unlisted?.close(), target?.close()]);
});

describe("CORS in a real browser (Chromium)", () => {
  it("X-ID-CORS-2 the admin lists the application's browser origins in the dashboard's form", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${target.url}/dashboard`);
      await page.waitForURL(onIdentity("/oauth/authorize"));
      await page.getByLabel("Email").fill(admin.email);
      await page.getByLabel("Password").fill(admin.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { name: `Applications of ${ORG_NAME}` }).waitFor();
      await page.getByRole("link", { name: APP_NAME }).click();
      await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();

      // Until now: the origins of the redirect URIs, both of them.
      const derived = page.getByRole("radio", { name: /The origins of the redirect URIs/ });
      expect(await derived.isChecked()).toBe(true);
      expect(await page.getByText(`${listed.origin}, ${unlisted.origin}`).count()).toBe(1);

      await page.getByRole("radio", { name: /Only these origins/ }).check();
      await page.getByLabel("Allowed origins, one per line").fill(`${listed.origin}/`);
      await page.getByRole("button", { name: "Save settings" }).click();
      // Written as a URL, not as the origin a browser sends: the field says how to write it.
      await page.getByText(`must be written exactly as browsers send it: "${listed.origin}"`).waitFor();
      await page.getByLabel("Allowed origins, one per line").fill(listed.origin);
      await page.getByRole("button", { name: "Save settings" }).click();
      await page.getByText("Saved.").waitFor();
      // A public client's view has no secret section, and shows nothing in its place.
      expect(await page.getByText("null", { exact: true }).count()).toBe(0);
      await page.screenshot({ path: `${SHOTS}/identity-cors-dashboard.png`, fullPage: true });
    } finally {
      await context.close();
    }
    const stored = await request(target.url, "GET", `/api/applications/${app.id}`, { token: adminToken });
    expect(stored.body.allowedOrigins).toEqual([listed.origin]);
  }, 120_000);

  it("X-ID-CORS-1 X-ID-CORS-2 a page of a listed origin completes Authorization Code + PKCE with its public client, fetching the token endpoint and UserInfo itself", async () => {
    const page = await userContext.newPage();
    const failed: string[] = [];
    page.on("requestfailed", (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
    await page.goto(`${listed.origin}/`);
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await page.getByRole("heading", { name: `Sign in to ${APP_NAME}` }).waitFor();
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.origin === listed.origin && u.pathname === "/callback");
    await page.getByText(/^(Signed in as|.* failed:)/).waitFor();
    expect(await status(page).textContent()).toBe(`Signed in as ${user.email}`);
    expect(failed).toEqual([]);
    await page.screenshot({ path: `${SHOTS}/identity-cors-signed-in.png`, fullPage: true });
    await page.close();
  }, 120_000);

  it("X-ID-CORS-1 X-ID-CORS-2 the same page from an unlisted origin gets its code, but the browser refuses the token endpoint's answer and UserInfo's preflight: its fetches reject", async () => {
    const page = await userContext.newPage();
    const logs: string[] = [];
    page.on("console", (m) => logs.push(m.text()));
    // Signed in already (single sign-on) and consented: straight back to this origin's redirect URI with a code.
    await page.goto(`${unlisted.origin}/`);
    await page.waitForURL((u) => u.origin === unlisted.origin && u.pathname === "/callback");
    expect(new URL(page.url()).searchParams.get("code")).toBeTruthy();
    await page.getByText(/^(Signed in as|.* failed:)/).waitFor();
    expect(await status(page).textContent()).toMatch(/^Token request failed: TypeError: Failed to fetch/);
    // Chromium says why: the answer carried no Access-Control-Allow-Origin for this origin.
    expect(logs.join("\n")).toMatch(new RegExp(`from origin '${unlisted.origin}' has been blocked by CORS policy`));
    await page.screenshot({ path: `${SHOTS}/identity-cors-refused.png`, fullPage: true });

    // UserInfo with a perfectly good token of this application: the preflight is refused first.
    const flow = await authorizeWithPassword(target.url, {
      clientId: app.clientId,
      redirectUri: `${listed.origin}/callback`,
      email: user.email,
      password: user.password,
      scope: "openid email",
    });
    const tokens = await request(target.url, "POST", "/oauth/token", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: flow.code,
        redirect_uri: `${listed.origin}/callback`,
        client_id: app.clientId,
        code_verifier: flow.verifier,
      }).toString(),
    });
    expect(tokens.status, tokens.text).toBe(200);
    const userinfo = `${target.url}/oauth/userinfo`;
    expect(await fetchFromPage(page, userinfo, { headers: { authorization: `Bearer ${tokens.body.access_token}` } })).toMatch(
      /^rejected: TypeError: Failed to fetch/,
    );
    // The public documents stay readable from any origin.
    expect(await fetchFromPage(page, `${target.url}/.well-known/openid-configuration`)).toBe("ok 200");
    // And the administration API from no other origin, listed or not.
    expect(await fetchFromPage(page, `${target.url}/api/applications`, { headers: { authorization: `Bearer ${adminToken}` } })).toMatch(
      /^rejected/,
    );
    await page.close();

    const listedPage = await userContext.newPage();
    await listedPage.goto(`${listed.origin}/blank`);
    expect(await fetchFromPage(listedPage, userinfo, { headers: { authorization: `Bearer ${tokens.body.access_token}` } })).toBe("ok 200");
    expect(
      await fetchFromPage(listedPage, `${target.url}/api/applications`, { headers: { authorization: `Bearer ${adminToken}` } }),
    ).toMatch(/^rejected/);
    await listedPage.close();
  }, 120_000);
});
