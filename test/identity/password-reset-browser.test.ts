/**
 * X-ID-RST-1, X-ID-RST-3, X-ID-RST-5 in a real browser (Debian's Chromium, playwright-core): a user
 * who forgot the password starts at a client application's sign-in (oauth4webapi), asks for a link
 * on "Forgot password?", opens the local mailbox page (X-ID-MAIL-5), follows the link in the
 * message's HTML body, chooses a new password, and signs in with it; the client application's own
 * authorization request (its state, PKCE and nonce) completes. Waits are on URLs and elements,
 * never on time.
 */
import { mkdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext } from "playwright-core";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { RelyingParty } from "../support/browser/relying-party.ts";

const SHOTS = ".tmp";
const user = { email: uniqueEmail("forgetful"), password: "the password I forgot", newPassword: "a password I will remember" };

let target: IdentityTarget;
let browser: Browser;
let context: BrowserContext;
let rp: RelyingParty;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [browser, target] = await Promise.all([launchChromium(chromiumPath()), identityTarget()]);
  if (!target.service || !target.createOrganization)
    throw new Error("the browser test needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  const { organizationId } = await target.createOrganization("Reset Browser Test");
  rp = new RelyingParty(target.url, "Journal (reset test)");
  await rp.start();
  const { application, clientSecret } = await target.service.deps.accounts.createApplication(organizationId, {
    name: rp.name,
    clientType: "confidential",
    redirectUris: [rp.redirectUri],
    allowedScopes: ["openid", "profile", "email", "offline_access"],
    enabledProviders: [],
    branding: { primaryColor: "#00695c" },
  });
  rp.register(application.clientId, clientSecret!);
  await target.service.deps.accounts.registerUser({ email: user.email, password: user.password, firstName: "Ada", lastName: "Lovelace" });
  context = await browser.newContext();
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([context?.close()]);
  await Promise.allSettled([browser?.close(), rp?.close(), target?.close()]);
});

const onIdentity = (path: string) => (u: URL) => u.origin === target.url && u.pathname === path;

describe("password reset in a real browser (Chromium, playwright-core, oauth4webapi)", () => {
  it("X-ID-RST-1 X-ID-RST-3 X-ID-RST-5 forgot password, the link from the local mailbox, a new password, and the application's sign-in completes with it", async () => {
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${rp.url}/login`);
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await page.getByRole("link", { name: "Forgot password?" }).click();
    await page.waitForURL(onIdentity("/forgot-password"));
    await page.getByRole("heading", { name: "Forgot your password?" }).waitFor();
    expect(await page.title()).toContain(rp.name);
    await page.getByLabel("Email").fill(user.email);
    await page.getByRole("button", { name: "Send the link" }).click();
    await page.waitForURL(onIdentity("/forgot-password/sent"));
    await page.getByRole("heading", { name: "Check your email" }).waitFor();
    await page.screenshot({ path: `${SHOTS}/identity-reset-sent.png`, fullPage: true });

    // The local mailbox, as a newcomer running npm start reads it.
    await target.service!.deps.mail.dispatchDue();
    await page.goto(`${target.url}/dev/mailbox`);
    await page.getByRole("link", { name: `Reset your ${rp.name} password` }).click();
    await page.getByRole("link", { name: "The HTML body" }).click();
    await page.getByRole("link", { name: "Choose a new password" }).click();
    await page.waitForURL(onIdentity("/reset-password"));
    await page.getByRole("heading", { name: "Choose a new password" }).waitFor();
    await page.getByLabel("New password").fill(user.newPassword);
    await page.screenshot({ path: `${SHOTS}/identity-reset-form.png`, fullPage: true });
    await page.getByRole("button", { name: "Change password" }).click();
    await page.waitForURL(onIdentity("/reset-password/done"));
    await page.getByRole("heading", { name: "Your password was changed" }).waitFor();

    // Back to the application's sign-in; the new password completes the client's own request.
    await page.getByRole("link", { name: `Sign in to ${rp.name}` }).click();
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.newPassword);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.origin === rp.url);
    expect(rp.failures.join("; ")).toBe("");
    await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
    expect(rp.signIns).toHaveLength(1);
    expect(rp.signIns[0]!.idClaims.email).toBe(user.email);
  });
});
