/**
 * The API reference (X-ID-DOC-1, X-API-15 for every service) in a real browser: Debian's Chromium opens `/docs` and Redoc,
 * loaded from the service itself under the page's CSP, renders the service's own document. Every
 * answer the browser gets comes from the service's origin: the reference works without internet.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import {
  emailTarget,
  identityTarget,
  repositoryTarget,
  type EmailTarget,
  type IdentityTarget,
  type RepositoryTarget,
} from "../../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";

let target: IdentityTarget;
let repository: RepositoryTarget;
let email: EmailTarget;
let browser: Browser;

beforeAll(async () => {
  [browser, target, repository, email] = await Promise.all([
    launchChromium(chromiumPath()),
    identityTarget(),
    repositoryTarget(),
    emailTarget(),
  ]);
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([browser?.close(), target?.close(), repository?.close(), email?.close()]);
});

describe("API reference in a real browser", () => {
  it("X-ID-DOC-1 /docs renders the service's own OpenAPI document with Redoc, with nothing loaded from another origin and no script error", async () => {
    const page = await browser.newPage();
    const origins = new Set<string>();
    const errors: string[] = [];
    page.on("response", (r) => origins.add(new URL(r.url()).origin));
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${target.url}/docs`);
    // The document's title, an operation summary and a decision from the spec's text, as Redoc renders them.
    await page
      .getByRole("heading", { name: /Identity Service/ })
      .first()
      .waitFor({ timeout: 60_000 });
    // Operations sit in collapsed menu groups: present, not necessarily visible.
    await page.getByText("Token endpoint").first().waitFor({ state: "attached", timeout: 60_000 });
    expect(await page.getByText("X-ID-TOK-5").count()).toBeGreaterThan(0);
    expect([...origins]).toEqual([target.url]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("X-API-15 the repository and email services render their own documents at /docs the same way", async () => {
    for (const [url, title, operation] of [
      [repository.url, /Repository and Build Service/, "Create a repository"],
      [email.url, /Email Service/, "Send an email"],
    ] as const) {
      const page = await browser.newPage();
      const origins = new Set<string>();
      const errors: string[] = [];
      page.on("response", (r) => origins.add(new URL(r.url()).origin));
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${url}/docs`);
      await page.getByRole("heading", { name: title }).first().waitFor({ timeout: 60_000 });
      await page.getByText(operation).first().waitFor({ state: "attached", timeout: 60_000 });
      expect(await page.getByText("X-API-14").count()).toBeGreaterThan(0); // the versioning policy, from the document's text
      expect([...origins]).toEqual([url]);
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 180_000);
});
