/**
 * The repository API as a resource server of identity, in a real browser (X-RB-14, X-RB-15, X-RB-10):
 * Debian's Chromium, the real identity and repository services, and a single-page app
 * (test/support/browser/spa.js, with oauth4webapi) on an origin of its own. The page signs
 * in with identity (a public client, Authorization Code + PKCE), then calls the repository API with
 * the access token: the repository trusts identity for that application's tokens and lists the
 * page's origin in CORS_ORIGINS. The page asks identity for tokens made for the repository (RFC 8707
 * `resource`, X-ID-RES-1) with its API scope `repository`, the scope the repository requires by default.
 * Waits are on URLs and page text, never on time.
 */
import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createApp, createUser, type TestApp } from "../../conformance/harness/identity-fixtures.ts";
import { identityTarget, repositoryTarget, type IdentityTarget, type RepositoryTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { startSpaServer, type SpaServer } from "../support/browser/spa-server.ts";

const SHOTS = ".tmp";
/** The repository API's resource indicator: the audience identity names in its tokens and the repository checks. */
const AUDIENCE = "https://repository.example";

let identity: IdentityTarget;
let repository: RepositoryTarget;
let browser: Browser;
let spa: SpaServer;
let app: TestApp;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [browser, identity, spa] = await Promise.all([launchChromium(chromiumPath()), identityTarget(), startSpaServer()]);
  if (!identity.service) throw new Error("the browser test needs the in-process services (unset CONFORMANCE_IDENTITY_URL)");
  // A public client whose redirect URI is on the page's origin, so identity answers that origin's fetches (X-ID-CORS-2).
  app = await createApp(identity, {
    clientType: "public",
    redirectUris: [`${spa.origin}/callback`],
    allowedScopes: ["openid", "profile"],
    resources: [AUDIENCE],
    apiScopes: ["repository"],
  });
  repository = await repositoryTarget({
    env: {
      CORS_ORIGINS: spa.origin,
      REPOSITORY_TRUSTED_ISSUER: identity.url,
      REPOSITORY_TRUSTED_AUDIENCE: AUDIENCE,
    },
  });
  spa.configure({ issuer: identity.url, clientId: app.clientId, resource: repository.url, audience: AUDIENCE });
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([browser?.close(), spa?.close(), repository?.close(), identity?.close()]);
});

describe("a page signs in with identity and calls the repository API (Chromium)", () => {
  it("X-RB-14 X-RB-15 the page completes Authorization Code + PKCE with identity, then its access token works on /auth/me and /repository", async () => {
    const user = await createUser(identity);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const failed: string[] = [];
      page.on("requestfailed", (r) => failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
      await page.goto(`${spa.origin}/`);
      await page.waitForURL((u) => u.origin === identity.url && u.pathname === "/oauth/authorize");
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill(user.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL((u) => u.origin === spa.origin && u.pathname === "/callback");
      await page.getByText(/^(Repository user|.* failed:)/).waitFor();
      expect(await page.locator("#status").textContent()).toMatch(/^Repository user [0-9a-f-]{36}: from-the-browser$/);
      expect(failed).toEqual([]);
      await page.screenshot({ path: `${SHOTS}/repository-trusted-issuer.png`, fullPage: true });
    } finally {
      await context.close();
    }
  }, 120_000);
});
