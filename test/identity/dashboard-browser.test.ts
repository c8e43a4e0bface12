/**
 * The identity dashboard (web/dashboard/, bundled to /dashboard/app.js) in a real browser: Debian's
 * Chromium driven by playwright-core, as test/identity/browser.test.ts. An organization admin signs
 * in through the dashboard's own Authorization Code + PKCE flow, then creates an application and
 * edits it the way a person does (by the labels on the page), and every change is read back through
 * the admin API with a token of its own: what the dashboard shows and what the server stored agree.
 *
 * The steps build on one another (one admin, one browser tab, one application), so they run in
 * order. Waits are on URLs and elements, never on time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { request } from "../../conformance/harness/http.ts";
import { adminTokenViaFlow } from "../../conformance/harness/oauth-flow.ts";
import { identityTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { SOCIAL_PROVIDERS } from "../support/browser/social-providers.ts";

const ORG_NAME = "Acme Dashboard Test";
const APP_NAME = "Ledger (dashboard test)";

let target: IdentityTarget;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let admin: { email: string; password: string };
let apiToken = "";
let appId = "";
let clientId = "";
let clientSecret = "";

/** The application as the admin API has it now. */
async function stored(): Promise<Record<string, any>> {
  const res = await request(target.url, "GET", `/api/applications/${appId}`, { token: apiToken });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/**
 * Whether a client secret authenticates the application, asked of the revocation endpoint (RFC 7009:
 * an unknown token is 200 for an authenticated client; a wrong secret is 401 invalid_client).
 */
async function secretWorks(secret: string): Promise<number> {
  const res = await request(target.url, "POST", "/oauth/revoke", {
    headers: {
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ token: "not-a-token-of-this-server" }).toString(),
  });
  return res.status;
}

/** What the page keeps in the browser's storage (the DOM lib is not in the project's types). */
const storage = () =>
  page.evaluate(() => {
    const g = globalThis as unknown as { localStorage: { length: number }; sessionStorage: { getItem(k: string): string | null } };
    return { local: g.localStorage.length, token: g.sessionStorage.getItem("identity-dashboard.token") };
  });

beforeAll(async () => {
  const executablePath = chromiumPath();
  [browser, target] = await Promise.all([
    launchChromium(executablePath),
    identityTarget({ env: { IDENTITY_SOCIAL_PROVIDERS: JSON.stringify(SOCIAL_PROVIDERS) } }),
  ]);
  if (!target.createOrganization)
    throw new Error("the dashboard browser test needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  const organization = await target.createOrganization(ORG_NAME);
  admin = organization.admin;
  // The test's own view of the server, independent of the browser's token.
  apiToken = await adminTokenViaFlow(target, organization.admin);
  context = await browser.newContext();
  page = await context.newPage();
  page.on("dialog", (dialog) => void dialog.accept()); // the confirm() before regenerating
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([context?.close()]);
  await Promise.allSettled([browser?.close(), target?.close()]);
});

describe("identity dashboard in a real browser (Chromium, playwright-core)", () => {
  it("X-ID-ADM-1 signs the admin in as identity-dashboard with Authorization Code + PKCE S256, keeps the token in this tab only, clears the URL", async () => {
    await page.goto(`${target.url}/dashboard`);
    await page.waitForURL((u) => u.pathname === "/oauth/authorize");
    const authorize = new URL(page.url()).searchParams;
    expect(Object.fromEntries([...authorize].filter(([k]) => k !== "state" && k !== "code_challenge"))).toEqual({
      response_type: "code",
      client_id: "identity-dashboard",
      redirect_uri: `${target.url}/dashboard`,
      scope: "openid profile email",
      code_challenge_method: "S256",
    });
    expect(authorize.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByLabel("Email").fill(admin.email);
    await page.getByLabel("Password").fill(admin.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: `Applications of ${ORG_NAME}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    expect(new URL(page.url()).search).toBe(""); // code, state and iss gone from the address bar
    const kept = await storage();
    expect(kept.local).toBe(0);
    expect(JSON.parse(kept.token ?? "{}").accessToken).toEqual(expect.any(String));
    expect(await page.getByText("No applications yet.").count()).toBe(1);
  });

  it("ID-APP-1 creates a confidential application; its secret is shown once and authenticates it", async () => {
    await page.getByLabel("Name (shown on the login page)").fill(APP_NAME);
    await page.getByLabel("Client type").selectOption("confidential");
    await page.getByLabel("Redirect URIs, one per line").fill("https://ledger.example.com/callback");
    await page.getByRole("button", { name: "Create application" }).click();
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    clientSecret = (await page.locator("code.secret").textContent())!.trim();
    expect(clientSecret.length).toBeGreaterThanOrEqual(32);

    const list = await request(target.url, "GET", "/api/applications", { token: apiToken });
    expect(list.body.items.map((a: { name: string }) => a.name)).toEqual([APP_NAME]);
    ({ id: appId, clientId } = list.body.items[0]);
    expect(new URL(page.url()).hash).toBe(`#app/${appId}`);
    expect(await page.locator("code", { hasText: clientId }).count()).toBe(1);
    expect(await stored()).toMatchObject({
      name: APP_NAME,
      clientType: "confidential",
      redirectUris: ["https://ledger.example.com/callback"],
    });
    expect(await secretWorks(clientSecret)).toBe(200);

    // Shown once: the same page, loaded again, has no secret on it.
    await page.reload();
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    expect(await page.locator("code.secret").count()).toBe(0);
  });

  it("ID-APP-1 edits redirect URIs, scopes, social providers and branding; the admin API has each change", async () => {
    const uris = ["https://ledger.example.com/callback", "http://127.0.0.1:8080/cb"];
    await page.getByLabel("Redirect URIs, one per line").fill(uris.join("\n"));
    await page.getByLabel("Profile: name (profile)").setChecked(false);
    await page.getByLabel("Email address (email)").setChecked(true);
    await page.getByLabel("Refresh tokens (offline_access)").setChecked(true);
    await page.getByLabel("Acme SSO").setChecked(true);
    expect(await page.getByLabel("Other SSO").isChecked()).toBe(false);
    await page.getByLabel("Logo URL").fill("https://ledger.example.com/logo.png");
    await page.getByLabel("Primary colour").fill("#8E24AA");
    await page.getByLabel("Secondary colour").fill("#F3E5F5");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();

    const a = await stored();
    expect(a.redirectUris).toEqual(uris);
    expect([...a.allowedScopes].sort()).toEqual(["email", "offline_access", "openid"]);
    expect(a.enabledProviders).toEqual(["acme-sso"]);
    expect(a.branding).toEqual({ logoUrl: "https://ledger.example.com/logo.png", primaryColor: "#8E24AA", secondaryColor: "#F3E5F5" });

    // And back: a scope and the provider off, the branding cleared (it is replaced as a whole).
    await page.getByLabel("Refresh tokens (offline_access)").setChecked(false);
    await page.getByLabel("Acme SSO").setChecked(false);
    for (const label of ["Logo URL", "Primary colour", "Secondary colour"]) await page.getByLabel(label).fill("");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    const b = await stored();
    expect([...b.allowedScopes].sort()).toEqual(["email", "openid"]);
    expect(b.enabledProviders).toEqual([]);
    expect(b.branding).toEqual({});
  });

  it("X-ID-DEV-8 the device authorization grant is a checkbox of the settings, off for a new application", async () => {
    const box = page.getByLabel("Allow the device authorization grant (sign-in with a code)");
    expect(await box.isChecked()).toBe(false);
    await box.setChecked(true);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect((await stored()).deviceAuthorization).toBe(true);
    await page.reload();
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    expect(await box.isChecked()).toBe(true);
    await box.setChecked(false);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect((await stored()).deviceAuthorization).toBe(false);
  });

  it("X-ID-DPOP-8 DPoP-bound tokens are a checkbox of the settings, off for a new application", async () => {
    const box = page.getByLabel("Require DPoP-bound tokens (refuse token requests without a DPoP proof)");
    expect(await box.isChecked()).toBe(false);
    await box.setChecked(true);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect((await stored()).dpopBoundAccessTokens).toBe(true);
    await page.reload();
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    expect(await box.isChecked()).toBe(true);
    await box.setChecked(false);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect((await stored()).dpopBoundAccessTokens).toBe(false);
  });

  it("X-ID-RES-2 X-ID-LOGOUT-3 X-ID-PAR-5 the APIs, sign-out and PAR settings are saved with the one PATCH and shown again after a reload", async () => {
    const par = page.getByLabel("Require pushed authorization requests (refuse sign-ins not started with POST /oauth/par)");
    const sid = page.getByLabel("The application needs the session ID (sid) in its logout tokens");
    expect(await par.isChecked()).toBe(false);
    const settings = {
      resources: ["https://api.ledger.example.com", "https://reports.ledger.example.com"],
      apiScopes: ["ledger:read", "ledger:write"],
      postLogoutRedirectUris: ["https://ledger.example.com/signed-out", "http://127.0.0.1:8080/bye"],
      backchannelLogoutUri: "https://ledger.example.com/backchannel-logout",
    };
    await page.getByLabel("Resource URIs it may ask tokens for, one per line").fill(settings.resources.join("\n"));
    await page.getByLabel("API scopes, one per line").fill(settings.apiScopes.join("\n"));
    await page.getByLabel("Return URIs after sign-out, one per line").fill(settings.postLogoutRedirectUris.join("\n"));
    await page.getByLabel("Back-channel logout URL").fill(settings.backchannelLogoutUri);
    await sid.setChecked(true);
    await par.setChecked(true);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect(await stored()).toMatchObject({ ...settings, backchannelLogoutSessionRequired: true, requirePushedAuthorizationRequests: true });

    await page.reload();
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    expect(await page.getByLabel("Resource URIs it may ask tokens for, one per line").inputValue()).toBe(settings.resources.join("\n"));
    expect(await page.getByLabel("API scopes, one per line").inputValue()).toBe(settings.apiScopes.join("\n"));
    expect(await page.getByLabel("Return URIs after sign-out, one per line").inputValue()).toBe(settings.postLogoutRedirectUris.join("\n"));
    expect(await page.getByLabel("Back-channel logout URL").inputValue()).toBe(settings.backchannelLogoutUri);
    expect(await sid.isChecked()).toBe(true);
    expect(await par.isChecked()).toBe(true);

    // And back: the lists emptied, the URL removed, both boxes off.
    for (const label of ["Resource URIs", "API scopes", "Return URIs after sign-out", "Back-channel logout URL"])
      await page.getByLabel(label).fill("");
    await sid.setChecked(false);
    await par.setChecked(false);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved. New sign-ins use these settings at once.").waitFor();
    expect(await stored()).toMatchObject({
      resources: [],
      apiScopes: [],
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
      backchannelLogoutSessionRequired: false,
      requirePushedAuthorizationRequests: false,
    });
  });

  it("X-ID-RES-2 X-ID-LOGOUT-3 a post-logout redirect URI and an API scope the API refuses are shown next to their fields, and nothing is saved", async () => {
    const before = await stored();
    const save = async () => {
      await page.getByRole("button", { name: "Save settings" }).click();
      await page.getByRole("alert").first().waitFor();
    };
    /** The error shown by a field (its last aria-describedby), or null when it is not marked invalid. */
    const errorOf = async (label: string) => {
      const input = page.getByLabel(label);
      if ((await input.getAttribute("aria-invalid")) !== "true") return null;
      const errorId = (await input.getAttribute("aria-describedby"))!.split(" ").at(-1)!;
      return page.locator(`#${errorId}`).textContent();
    };
    await page.getByLabel("Resource URIs it may ask tokens for, one per line").fill("https://api.ledger.example.com");
    await page.getByLabel("API scopes, one per line").fill("ledger:read\nopenid");
    await page.getByLabel("Return URIs after sign-out, one per line").fill("http://ledger.example.com/signed-out");
    await save(); // refused by the contract (a RedirectUri's pattern) before the service looks at the scopes
    expect(await errorOf("Return URIs after sign-out, one per line")).toMatch(/^Item 1: /);

    await page.getByLabel("Return URIs after sign-out, one per line").fill("https://ledger.example.com/signed-out");
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.locator('textarea[name="apiScopes"][aria-invalid="true"]').waitFor(); // refused by the service (X-ID-RES-2)
    expect(await errorOf("API scopes, one per line")).toMatch(/^Item 2: .*OpenID scope/);
    expect(await errorOf("Return URIs after sign-out, one per line")).toBeNull();
    expect(await errorOf("Resource URIs it may ask tokens for, one per line")).toBeNull();
    const after = await stored();
    expect([after.resources, after.apiScopes, after.postLogoutRedirectUris]).toEqual([
      before.resources,
      before.apiScopes,
      before.postLogoutRedirectUris,
    ]);
    await page.reload(); // a clean form for the next step
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
  });

  it("ID-APP-1 a redirect URI the API refuses is shown next to its field, and nothing is saved", async () => {
    const before = await stored();
    await page.getByLabel("Redirect URIs, one per line").fill("https://ledger.example.com/callback\nhttp://ledger.example.com/plain");
    await page.getByRole("button", { name: "Save settings" }).click();
    const input = page.getByLabel("Redirect URIs, one per line");
    await page.locator("[aria-invalid=true]").first().waitFor();
    expect(await input.getAttribute("aria-invalid")).toBe("true");
    const errorId = (await input.getAttribute("aria-describedby"))!.split(" ").at(-1)!;
    expect(await page.locator(`#${errorId}`).textContent()).toMatch(/^Item 2: /);
    expect(await page.getByRole("alert").count()).toBeGreaterThan(0);
    expect((await stored()).redirectUris).toEqual(before.redirectUris);
  });

  it("ID-APP-2 regenerates the client secret: the new one authenticates the application, the old one no longer does", async () => {
    await page.reload(); // a clean form
    await page.getByRole("heading", { name: APP_NAME, level: 2 }).waitFor();
    await page.getByLabel("When regenerating").selectOption("0");
    await page.getByRole("button", { name: "Regenerate client secret" }).click();
    await page.getByText("The previous secret no longer works.").waitFor();
    const newSecret = (await page.locator("code.secret").textContent())!.trim();
    expect(newSecret.length).toBeGreaterThanOrEqual(32);
    expect(newSecret).not.toBe(clientSecret);
    expect(await secretWorks(clientSecret)).toBe(401);
    expect(await secretWorks(newSecret)).toBe(200);
  });

  it("X-ID-ADM-1 adds a webhook and pauses it; the admin API has both", async () => {
    await page.getByRole("link", { name: "Manage webhooks" }).click();
    await page.getByRole("heading", { name: `Webhooks of ${APP_NAME}` }).waitFor();
    await page.getByLabel("Receiver URL").fill("https://hooks.example.com/ledger");
    await page.getByLabel("user.deleted").setChecked(false);
    await page.getByRole("button", { name: "Add webhook" }).click();
    await page.getByText("Webhook created. Its signing secret, shown once:").waitFor();
    const hooks = async () => (await request(target.url, "GET", `/api/applications/${appId}/webhooks`, { token: apiToken })).body.items;
    const [created] = await hooks();
    expect(created).toMatchObject({ url: "https://hooks.example.com/ledger", isActive: true });
    expect([...created.events].sort()).toEqual(["user.created", "user.updated"]);

    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    expect((await hooks())[0]).toMatchObject({ id: created.id, isActive: false });
  });
  it("X-ID-ADM-1 a public application is created without a secret, and its page offers none to regenerate", async () => {
    await page.goto(`${target.url}/dashboard#`);
    await page.getByRole("heading", { name: `Applications of ${ORG_NAME}` }).waitFor();
    await page.getByLabel("Name (shown on the login page)").fill("Pocket (dashboard test)");
    await page.getByLabel("Client type").selectOption("public");
    await page.getByLabel("Redirect URIs, one per line").fill("http://localhost:5173/callback");
    await page.getByRole("button", { name: "Create application" }).click();
    await page.getByRole("heading", { name: "Pocket (dashboard test)", level: 2 }).waitFor();
    expect(await page.getByText("Public client (PKCE, no secret)", { exact: false }).count()).toBe(1);
    expect(await page.locator("code.secret").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Regenerate client secret" }).count()).toBe(0);
    const list = await request(target.url, "GET", "/api/applications", { token: apiToken });
    expect(list.body.items.find((a: { name: string }) => a.name === "Pocket (dashboard test)")).toMatchObject({
      clientType: "public",
      redirectUris: ["http://localhost:5173/callback"],
    });
  });

  it("X-ID-ADM-1 the account screen edits the admin's own name; the admin API has it", async () => {
    await page.getByRole("link", { name: "Your account" }).click();
    await page.getByRole("heading", { name: "Your account", exact: true }).waitFor();
    expect(await page.getByText(admin.email).count()).toBe(1);
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("Last name").fill("Lovelace");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved.", { exact: true }).waitFor();
    const me = await request(target.url, "GET", "/api/users/me", { token: apiToken });
    expect(me.body).toMatchObject({ email: admin.email, firstName: "Ada", lastName: "Lovelace" });
  });

  it("X-ID-AUD-4 the audit log lists the organization's events newest first, filtered by type, older pages by cursor", async () => {
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.getByRole("heading", { name: `Audit log of ${ORG_NAME}` }).waitFor();
    await page.getByLabel("Type").selectOption("application.created");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("2 events").waitFor();
    const types = await page.locator("tbody tr td:nth-child(2)").allTextContents();
    expect(types).toEqual(["application.created", "application.created"]);
    // The newest first: the public application was created after the first one.
    const apps = await page.locator("tbody tr td:nth-child(5)").allTextContents();
    expect(apps[1]).toBe(appId);
    expect(await page.getByRole("button", { name: "Newer" }).isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Older" }).isDisabled()).toBe(true);
  });
});
