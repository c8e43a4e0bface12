/**
 * The second factor end to end in a real browser: Debian's Chromium driven by playwright-core, a
 * client application that uses oauth4webapi. The user opens /account/security without a session
 * (X-ID-MFA-10: signed in through the account client and brought back), turns on an authenticator
 * app by reading the key shown as text (codes computed with `otpauth`, independent of the
 * server's), signs out, then signs in to the application with the password and a code
 * (X-ID-MFA-4) and the client's ID token says so (X-ID-MFA-5: `amr` with `otp` and `mfa`, `acr`
 * of two factors).
 *
 * Codes use the real clock: the sign-in's code is the next time step's, which the one-step drift
 * window accepts (X-ID-MFA-1), so nothing waits for the enrolment's step to pass.
 */
import * as OTPAuth from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createUser } from "../../conformance/harness/identity-fixtures.ts";
import { identityTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { type RelyingParty, relyingPartyOfNewOrganization } from "../support/browser/relying-party.ts";

let target: IdentityTarget;
let browser: Browser;
let context: BrowserContext;
let rp: RelyingParty;
let user: { id: string; email: string; password: string };

const onIdentity = (path: string) => (u: URL) => u.origin === target.url && u.pathname === path;
const codeAt = (secret: string, timestamp: number) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp });

async function signInWithPassword(page: Page) {
  await page.getByLabel("Email").fill(user.email);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

beforeAll(async () => {
  const executablePath = chromiumPath();
  [browser, target] = await Promise.all([launchChromium(executablePath), identityTarget()]);
  ({ rp } = await relyingPartyOfNewOrganization(target, {
    organization: "Second factor browser test",
    application: "Notes (second factor)",
  }));
  user = await createUser(target);
  context = await browser.newContext();
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([context?.close()]);
  await Promise.allSettled([browser?.close(), rp?.close(), target?.close()]);
});

describe("second factor in a real browser (Chromium, playwright-core, oauth4webapi)", () => {
  it("X-ID-MFA-2 X-ID-MFA-5 enrol TOTP on /account/security, sign out, sign in with password and code: the ID token has amr otp+mfa and acr 2fa", async () => {
    const page = await context.newPage();

    // X-ID-MFA-10: no session yet, so the Security page signs in first and comes back.
    await page.goto(`${target.url}/account/security`);
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await signInWithPassword(page);
    await page.waitForURL(onIdentity("/account/security"));
    await page.getByRole("heading", { name: "Security", exact: true }).waitFor();
    expect(await page.getByRole("link", { name: "Your account" }).getAttribute("href")).toBe("/account");

    // X-ID-MFA-2: the key shown as text is what an authenticator app would read from the QR code.
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    const secret = ((await page.locator("#totp-secret").textContent()) ?? "").replace(/\s/g, "");
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await page.locator("figure.qr svg").count()).toBe(1);
    await page.getByLabel("Code from the app").fill(codeAt(secret, Date.now()));
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByText("Two-step verification is on.").waitFor();
    expect(await page.locator("li code").count()).toBe(10);

    // Sign out through the hosted sign-out page.
    await page.goto(`${target.url}/logout`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "You are signed out" }).waitFor();

    // The application's sign-in: the password, then the second step.
    await page.goto(`${rp.url}/login`);
    await page.waitForURL(onIdentity("/oauth/authorize"));
    await signInWithPassword(page);
    await page.waitForURL(onIdentity("/signin/second-factor"));
    await page.getByRole("heading", { name: "Two-step verification" }).waitFor();
    await page.getByLabel("Code").fill(codeAt(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.waitForURL((u) => u.origin === rp.url || onIdentity("/oauth/authorize")(u));
    if (new URL(page.url()).origin === target.url) {
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL((u) => u.origin === rp.url);
    }
    await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
    expect(rp.failures).toEqual([]);
    expect(rp.signIns).toHaveLength(1);
    const claims = rp.signIns[0]!.idClaims;
    expect(claims.sub).toBe(user.id);
    expect(claims.amr).toEqual(expect.arrayContaining(["pwd", "otp", "mfa"]));
    expect(claims.acr).toBe("urn:identity:loa:2fa");
    expect(claims.auth_time).toEqual(expect.any(Number));
  }, 120_000);
});
