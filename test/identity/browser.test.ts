/**
 * The identity service end to end in a real browser: Debian's Chromium driven
 * by playwright-core, two client applications that use oauth4webapi, the hosted sign-up, login and
 * consent pages, single sign-on, and the dashboard (its own PKCE sign-in, branding, secret
 * regeneration). Each step is asserted where a user or a client would see it: in the page, or in
 * what the client library received.
 *
 * The steps build on one another (one user, one browser session), so they run in order. Waits are
 * on URLs and elements, never on time. Screenshots land in .tmp/ (git-ignored) for a human look.
 */
import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { decodeJwt } from "../../conformance/harness/http.ts";
import { adminTokenViaFlow } from "../../conformance/harness/oauth-flow.ts";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { startLogoServer, type LogoServer } from "../support/browser/logo-server.ts";
import { registerRelyingParty, RelyingParty, tokenError, type SignIn } from "../support/browser/relying-party.ts";
import { SOCIAL_PROVIDERS } from "../support/browser/social-providers.ts";

const SHOTS = ".tmp";
const ORG_NAME = "Acme Browser Test";
const BRAND_V1 = "#2e7d32";
const BRAND_V2 = "#8e24aa";
// Two social providers on the deployment; app A enables only the first (ID-AZ-7: "and no other").
// Never contacted: the test does not click them.
const PROVIDERS = SOCIAL_PROVIDERS;

const user = { email: uniqueEmail("browser"), password: "correct horse battery staple", firstName: "Grace", lastName: "Hopper" };

let target: IdentityTarget;
let browser: Browser;
let logos: LogoServer;
let organization: { organizationId: string; admin: { email: string; password: string; userId: string } };
let appA: RelyingParty;
let appB: RelyingParty;

let userContext: BrowserContext;
let adminContext: BrowserContext | undefined;
let adminPage: Page | undefined;
let firstSignIn: SignIn;
let latestRefreshToken = "";

/** The one piece of the DOM API used in page.evaluate (the project compiles without the DOM lib). */
interface BrowserWindow {
  getComputedStyle(element: unknown): { backgroundColor: string };
}

/** `#RRGGBB` → the `rgb(r, g, b)` a computed style reports. */
const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;

const onIdentity = (path: string) => (u: URL) => u.origin === target.url && u.pathname === path;
const onClient = (rp: RelyingParty) => (u: URL) => u.origin === rp.url;

/** The branding a login page actually renders: its logo (loaded or not) and its primary colour. */
async function renderedBranding(page: Page) {
  const logo = page.locator("img.logo");
  return {
    logoCount: await logo.count(),
    logoSrc: (await logo.count()) ? await logo.getAttribute("src") : null,
    // naturalWidth > 0 only when the image really loaded (CSP, TLS and the server all agreed).
    logoLoaded: (await logo.count())
      ? await logo.evaluate((img) => {
          const i = img as unknown as { complete: boolean; naturalWidth: number };
          return i.complete && i.naturalWidth > 0;
        })
      : false,
    buttonColour: await page
      .getByRole("button", { name: "Sign in", exact: true })
      .evaluate((b) => (globalThis as unknown as BrowserWindow).getComputedStyle(b).backgroundColor),
  };
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const executablePath = chromiumPath();
  [browser, logos, target] = await Promise.all([
    launchChromium(executablePath),
    startLogoServer(),
    identityTarget({ env: { IDENTITY_SOCIAL_PROVIDERS: JSON.stringify(PROVIDERS) } }),
  ]);
  if (!target.createOrganization)
    throw new Error("the browser test needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  organization = await target.createOrganization(ORG_NAME);
  // The API token the way automation gets one (X-ID-ADM-1); the dashboard itself signs in in the browser below.
  const adminToken = await adminTokenViaFlow(target, organization.admin);
  appA = new RelyingParty(target.url, "Notes (browser test)");
  appB = new RelyingParty(target.url, "Calendar (browser test)");
  await Promise.all([appA.start(), appB.start()]);
  await registerRelyingParty(appA, adminToken, {
    enabledProviders: ["acme-sso"],
    branding: { logoUrl: logos.logoUrl(BRAND_V1), primaryColor: BRAND_V1 },
  });
  await registerRelyingParty(appB, adminToken);
  userContext = await browser.newContext({ ignoreHTTPSErrors: true });
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  // Each one on its own: a failure to close one must not leave the others running.
  await Promise.allSettled([userContext?.close(), adminContext?.close()]);
  await Promise.allSettled([browser?.close(), appA?.close(), appB?.close(), logos?.close(), target?.close()]);
});

describe("identity service in a real browser (Chromium, playwright-core, oauth4webapi)", () => {
  it("ID-AZ-7 ID-AZ-8 sign up on the hosted page of the first application, land back at the client with a code, exchange it and refresh once", async () => {
    const page = await userContext.newPage();
    await page.goto(`${appA.url}/login`);
    await page.waitForURL(onIdentity("/oauth/authorize"));

    // ID-AZ-7: name, logo and colours, scopes in plain words, email/password, the enabled provider only.
    await page.getByRole("heading", { name: `Sign in to ${appA.name}` }).waitFor();
    for (const words of ["Know who you are", "See your name", "See your email address", "Stay connected"]) {
      expect(await page.locator("ul.scopes li", { hasText: words }).count(), words).toBe(1);
    }
    expect(await page.getByLabel("Email").count()).toBe(1);
    expect(await page.getByLabel("Password").count()).toBe(1);
    expect(await page.getByRole("link", { name: "Continue with Acme SSO" }).count()).toBe(1);
    expect(await page.getByRole("link", { name: "Continue with Other SSO" }).count()).toBe(0);
    expect(await renderedBranding(page)).toEqual({
      logoCount: 1,
      logoSrc: logos.logoUrl(BRAND_V1),
      logoLoaded: true,
      buttonColour: rgb(BRAND_V1),
    });
    await page.screenshot({ path: `${SHOTS}/identity-browser-login.png`, fullPage: true });

    // The sign-up path, filled in by the labels a user reads.
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.waitForURL(onIdentity("/signup"));
    await page.getByRole("heading", { name: "Create your account" }).waitFor();
    await page.getByLabel("First name").fill(user.firstName);
    await page.getByLabel("Last name").fill(user.lastName);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.screenshot({ path: `${SHOTS}/identity-browser-signup.png`, fullPage: true });
    await page.getByRole("button", { name: "Create account" }).click();

    // Consent if asked (signing up on a page that listed the scopes grants them), then back at the client.
    await page.waitForURL((u) => onClient(appA)(u) || onIdentity("/oauth/authorize")(u));
    if (new URL(page.url()).origin === target.url) {
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL(onClient(appA));
    }
    expect(new URL(page.url()).pathname).toBe("/callback");
    const failure = appA.failures.length ? appA.failures.join("; ") : "";
    expect(failure).toBe("");
    await page.getByRole("heading", { name: `Signed in to ${appA.name}` }).waitFor();
    expect(await page.locator("#email").textContent()).toBe(user.email);

    // ID-AZ-8: the redirect carried the code, the client's state unchanged, and this issuer (RFC 9207).
    expect(appA.signIns).toHaveLength(1);
    firstSignIn = appA.signIns[0]!;
    const callback = new URL(page.url()).searchParams;
    expect(callback.get("code")).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(callback.get("state")).toBe(firstSignIn.state);
    expect(callback.get("iss")).toBe(target.url);

    // What the client library received and validated: access, refresh and ID tokens for this user and client.
    expect(firstSignIn.accessClaims).toMatchObject({
      iss: target.url,
      aud: appA.clientId,
      client_id: appA.clientId,
      scope: "openid profile email offline_access",
    });
    expect(firstSignIn.refreshToken).toEqual(expect.any(String));
    expect(firstSignIn.expiresIn).toBeGreaterThan(0);
    expect(firstSignIn.idClaims).toMatchObject({
      iss: target.url,
      aud: appA.clientId,
      sub: firstSignIn.accessClaims.sub,
      email: user.email,
      given_name: user.firstName,
      family_name: user.lastName,
    });
    expect(firstSignIn.userinfo).toMatchObject({ sub: firstSignIn.idClaims.sub, email: user.email });

    // One refresh: new access token, rotated refresh token, same user.
    const refreshed = await appA.refresh(firstSignIn.refreshToken!);
    expect(refreshed.access_token).not.toBe(firstSignIn.accessToken);
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(refreshed.refresh_token).not.toBe(firstSignIn.refreshToken);
    expect(decodeJwt(refreshed.access_token).payload).toMatchObject({ sub: firstSignIn.idClaims.sub, client_id: appA.clientId });
    latestRefreshToken = refreshed.refresh_token!;
    await page.close();
  });

  it("ID-SSO-1 the same browser, sent by a second application, is not asked for a password and gets its code", async () => {
    const page = await userContext.newPage();
    await page.goto(`${appB.url}/login`);
    await page.waitForURL((u) => onClient(appB)(u) || onIdentity("/oauth/authorize")(u));
    if (new URL(page.url()).origin === target.url) {
      // A new application: the consent page, for the signed-in user, with no password field.
      await page.getByRole("heading", { name: `Continue to ${appB.name}` }).waitFor();
      expect(await page.locator("input[type=password]").count()).toBe(0);
      expect(await page.getByText(user.email).count()).toBeGreaterThan(0);
      await page.screenshot({ path: `${SHOTS}/identity-browser-consent.png`, fullPage: true });
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL(onClient(appB));
    }
    expect(appB.failures).toEqual([]);
    await page.getByRole("heading", { name: `Signed in to ${appB.name}` }).waitFor();
    expect(new URL(page.url()).searchParams.get("code")).toBeTruthy();
    expect(appB.signIns).toHaveLength(1);
    expect(appB.signIns[0]!.idClaims).toMatchObject({ sub: firstSignIn.idClaims.sub, aud: appB.clientId, email: user.email });
    await page.close();
  });

  it("ID-APP-1 the dashboard signs its admin in through the hosted page (PKCE) and edits the branding; the login page shows it", async () => {
    adminContext = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = (adminPage = await adminContext.newPage());
    page.on("dialog", (dialog) => void dialog.accept()); // the confirm() before regenerating

    await page.goto(`${target.url}/dashboard`);
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await page.getByRole("heading", { name: "Sign in to Identity dashboard" }).waitFor();
    await page.getByLabel("Email").fill(organization.admin.email);
    await page.getByLabel("Password").fill(organization.admin.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(onIdentity("/dashboard"));
    await page.getByRole("heading", { name: `Applications of ${ORG_NAME}` }).waitFor();
    // The code, state and iss do not stay in the address bar.
    expect(new URL(page.url()).search).toBe("");

    await page.getByRole("link", { name: appA.name }).click();
    await page.getByRole("heading", { name: appA.name, level: 2 }).waitFor();
    expect(await page.locator("code", { hasText: appA.clientId }).count()).toBe(1);
    expect(await page.getByLabel("Primary colour").inputValue()).toBe(BRAND_V1);
    await page.getByLabel("Logo URL").fill(logos.logoUrl(BRAND_V2));
    await page.getByLabel("Primary colour").fill(BRAND_V2);
    await page.getByRole("button", { name: "Save settings" }).click();
    await page.getByText("Saved.").waitFor();
    await page.screenshot({ path: `${SHOTS}/identity-browser-dashboard.png`, fullPage: true });

    // A signed-out visitor (fresh context, no session) starting at the client sees the new branding.
    const visitor = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const login = await visitor.newPage();
      await login.goto(`${appA.url}/login`);
      await login.waitForURL(onIdentity("/oauth/authorize"));
      await login.getByRole("heading", { name: `Sign in to ${appA.name}` }).waitFor();
      expect(await login.locator("input[type=password]").count()).toBe(1);
      expect(await renderedBranding(login)).toEqual({
        logoCount: 1,
        logoSrc: logos.logoUrl(BRAND_V2),
        logoLoaded: true,
        buttonColour: rgb(BRAND_V2),
      });
      await login.screenshot({ path: `${SHOTS}/identity-browser-login-rebranded.png`, fullPage: true });
    } finally {
      await visitor.close();
    }
  });

  it("ID-APP-2 regenerating the client secret in the dashboard: the old secret fails at the token endpoint (401 invalid_client), the new one works", async () => {
    const page = adminPage;
    if (!page) throw new Error("needs the dashboard signed in by the previous step");
    const oldSecret = appA.secret;
    await page.getByRole("button", { name: "Regenerate client secret" }).click();
    const shown = page.locator("code.secret");
    await shown.waitFor();
    const newSecret = (await shown.textContent())!.trim();
    expect(newSecret.length).toBeGreaterThanOrEqual(32);
    expect(newSecret).not.toBe(oldSecret);
    expect(await page.getByText("The previous secret no longer works.").count()).toBe(1);

    // The old secret: refused as the client's credential.
    const refused = await appA.refresh(latestRefreshToken, oldSecret).then(
      () => ({ status: 200, error: "none" }),
      (err) => tokenError(err),
    );
    expect(refused).toMatchObject({ status: 401, error: "invalid_client", challenge: "basic" });

    // The new secret, deployed in the client: the refresh grant and a whole new sign-in work.
    appA.useSecret(newSecret);
    const refreshed = await appA.refresh(latestRefreshToken);
    expect(refreshed.access_token).toEqual(expect.any(String));
    const browserPage = await userContext.newPage();
    await browserPage.goto(`${appA.url}/login`);
    await browserPage.waitForURL(onClient(appA)); // signed in and consented already: straight back with a code
    expect(appA.failures).toEqual([]);
    await browserPage.getByRole("heading", { name: `Signed in to ${appA.name}` }).waitFor();
    expect(appA.signIns).toHaveLength(2);
    await browserPage.close();
  });
});
