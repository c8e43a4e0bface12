/**
 * X-ID-EVF-5 end to end in Chromium: a person signs up on the hosted page of an application that
 * requires a verified email address, is stopped on the verification page, opens the local mailbox
 * (`/dev/mailbox`), follows the link in the message's HTML body, and continues to the application,
 * which receives the code of the authorization it started, with `email_verified` true.
 * Waits are on URLs and elements, never on time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { type RegisteredApplication, type RelyingParty, relyingPartyOfNewOrganization } from "../support/browser/relying-party.ts";

let target: IdentityTarget;
let browser: Browser;
let rp: RelyingParty;

beforeAll(async () => {
  const executablePath = chromiumPath();
  [browser, target] = await Promise.all([launchChromium(executablePath), identityTarget()]);
  let application: RegisteredApplication;
  ({ rp, application } = await relyingPartyOfNewOrganization(
    target,
    { organization: "Verified Org", application: "Verified Notes" },
    { requireVerifiedEmail: true },
  ));
  expect(application.requireVerifiedEmail).toBe(true);
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([browser?.close(), rp?.close(), target?.close()]);
});

describe("email verification in a real browser (Chromium)", () => {
  it("X-ID-EVF-5 sign up, stopped by an application that requires a verified email, verify from the local mailbox, continue the authorization", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const email = uniqueEmail("verify-browser");
      await page.goto(`${rp.url}/login`);
      await page.waitForURL((u) => u.origin === target.url && u.pathname === "/oauth/authorize");
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.waitForURL((u) => u.pathname === "/signup");
      await page.getByLabel("First name").fill("Ada");
      await page.getByLabel("Last name").fill("Lovelace");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("correct horse battery staple");
      await page.getByRole("button", { name: "Create account" }).click();

      // Stopped: the page says why and names the address.
      await page.waitForURL((u) => u.origin === target.url && u.pathname === "/verify-email");
      await page.getByRole("heading", { name: "Verify your email address" }).waitFor();
      expect(await page.locator("main").textContent()).toContain(email);
      expect(rp.signIns).toHaveLength(0);

      // The local mailbox, as a developer opens it: the message, its HTML body, the link.
      await page.goto(`${target.url}/dev/mailbox`);
      const row = page.locator("tr", { hasText: email });
      await row.getByRole("link").first().click();
      await page.getByRole("link", { name: "The HTML body" }).click();
      await page.getByRole("link", { name: "Confirm my address" }).click();
      await page.waitForURL((u) => u.pathname === "/verify-email/confirm");
      await page.getByRole("heading", { name: "Your email address is verified" }).waitFor();

      // The same authorization continues: the application receives its code.
      await page.getByRole("link", { name: `Continue to ${rp.name}` }).click();
      await page.waitForURL((u) => u.origin === rp.url);
      expect(rp.failures.join("; ")).toBe("");
      await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
      expect(rp.signIns).toHaveLength(1);
      expect(rp.signIns[0]!.idClaims).toMatchObject({ email, email_verified: true });
    } finally {
      await context.close();
    }
  });
});
