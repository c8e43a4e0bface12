/**
 * Passkeys in a real browser (X-ID-PK-1, X-ID-PK-3, X-ID-PK-7): Debian's Chromium driven by
 * playwright-core, as test/identity/browser.test.ts, with the DevTools virtual authenticator (a
 * platform authenticator that keeps discoverable credentials and verifies its user). A user signs
 * in to a client application with a password, adds a passkey on /account/passkeys through the
 * page's one script, then, signed out, signs in again with the passkey alone: the client receives
 * the same user, signed in with two factors. Last, with the application requiring a second factor,
 * a password sign-in goes on to the second step and the passkey answers it (X-ID-PK-9).
 *
 * WebAuthn needs a secure context and a relying party id that is a domain: the service's public URL
 * is http://localhost (a secure context; 127.0.0.1 could not be an RP id). The steps build on one
 * another (one user, one browser context, one authenticator), so they run in order. Waits are on
 * URLs and elements, never on time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { createUser } from "../../conformance/harness/identity-fixtures.ts";
import { identityTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { type RegisteredApplication, type RelyingParty, relyingPartyOfNewOrganization } from "../support/browser/relying-party.ts";

let target: IdentityTarget;
let browser: Browser;
let rp: RelyingParty;
let context: BrowserContext;
let page: Page;
let devtools: CDPSession;
let authenticatorId = "";
let applicationId = "";
let user: Awaited<ReturnType<typeof createUser>>;

const onIdentity = (path: string) => (u: URL) => u.origin === target.url && u.pathname === path;
const onClient = (u: URL) => u.origin === rp.url;

/** The credentials the virtual authenticator holds (DevTools protocol `WebAuthn.getCredentials`). */
async function storedCredentials() {
  const { credentials } = await devtools.send("WebAuthn.getCredentials", { authenticatorId });
  return credentials;
}

/** The client application's sign-in from its own /login: the login page of this service. */
async function openLoginPage() {
  await page.goto(`${rp.url}/login`);
  await page.waitForURL(onIdentity("/oauth/authorize"));
  await page.getByRole("heading", { name: `Sign in to ${rp.name}` }).waitFor();
}

beforeAll(async () => {
  const executablePath = chromiumPath();
  [browser, target] = await Promise.all([launchChromium(executablePath), identityTarget({ host: "localhost" })]);
  let application: RegisteredApplication;
  ({ rp, application } = await relyingPartyOfNewOrganization(target, {
    organization: "Acme Passkey Test",
    application: "Notes (passkey test)",
  }));
  applicationId = application.id;
  user = await createUser(target);
  context = await browser.newContext();
  page = await context.newPage();
  // The DevTools virtual authenticator: a built-in (platform) authenticator with a screen lock that
  // always verifies the user, holding discoverable credentials, as a phone or laptop does.
  devtools = await page.context().newCDPSession(page);
  await devtools.send("WebAuthn.enable");
  ({ authenticatorId } = await devtools.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  }));
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([context?.close()]);
  await Promise.allSettled([browser?.close(), rp?.close(), target?.close()]);
});

describe("passkeys in Chromium", () => {
  it("signs in with a password first (the session the passkeys page needs)", async () => {
    await openLoginPage();
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => onClient(u) || onIdentity("/oauth/authorize")(u));
    if (!onClient(new URL(page.url()))) {
      await page.getByRole("button", { name: "Allow" }).click();
      await page.waitForURL(onClient);
    }
    await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
    expect(rp.failures).toEqual([]);
    expect(rp.signIns).toHaveLength(1);
    expect(rp.signIns[0]!.idClaims.amr).toEqual(["pwd"]);
  });

  it("X-ID-PK-1 X-ID-PK-7 adds a passkey on /account/passkeys through the page's script", async () => {
    await page.goto(`${target.url}/account/passkeys`);
    await page.getByRole("heading", { name: "Your passkeys" }).waitFor();
    // The script found WebAuthn: the form shows and the "needs a browser that supports passkeys" note hides.
    await page.getByRole("button", { name: "Add a passkey" }).waitFor();
    expect(await page.locator("#passkey-unavailable").isHidden()).toBe(true);
    await page.getByLabel("Name of the new passkey").fill("Test laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("table", { name: "Your passkeys" }).waitFor();
    expect(await page.getByRole("cell", { name: "Test laptop" }).count()).toBe(1);
    const credentials = await storedCredentials();
    expect(credentials).toHaveLength(1);
    expect(credentials[0]!.isResidentCredential).toBe(true);
    expect(credentials[0]!.rpId).toBe("localhost");
  });

  it("X-ID-PK-3 signed out, signs in with the passkey alone: the same user, two factors", async () => {
    await context.clearCookies();
    await openLoginPage();
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await page.waitForURL(onClient);
    await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
    expect(rp.failures).toEqual([]);
    expect(rp.signIns).toHaveLength(2);
    const [first, second] = rp.signIns;
    expect(second!.idClaims.sub).toBe(first!.idClaims.sub);
    // The virtual authenticator's key is device-bound (no backup): `hwk`; user verification: `mfa`.
    expect(second!.idClaims.amr).toEqual(["hwk", "mfa"]);
    expect(second!.idClaims.acr).toBe("urn:identity:loa:2fa");
    // The authenticator signed once more, and the page lists the use.
    expect((await storedCredentials())[0]!.signCount).toBeGreaterThan(0);
    await page.goto(`${target.url}/account/passkeys`);
    await page.getByRole("table", { name: "Your passkeys" }).waitFor();
    expect(await page.getByRole("cell", { name: "never" }).count()).toBe(0);
  });

  it("X-ID-PK-9 the application requires a second factor: after the password, the passkey answers the second step", async () => {
    await target.service!.deps.factors.setApplicationPolicy(applicationId, "required");
    await context.clearCookies();
    await openLoginPage();
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(onIdentity("/signin/second-factor"));
    // The script found WebAuthn: the passkey form shows, and the "cannot use a passkey" note hides.
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL(onClient);
    await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
    expect(rp.failures).toEqual([]);
    expect(rp.signIns).toHaveLength(3);
    const third = rp.signIns[2]!;
    expect(third.idClaims.sub).toBe(rp.signIns[0]!.idClaims.sub);
    expect(third.idClaims.amr).toEqual(["pwd", "hwk", "mfa"]);
    expect(third.idClaims.acr).toBe("urn:identity:loa:2fa");
  });
});
