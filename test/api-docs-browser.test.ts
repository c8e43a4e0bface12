/**
 * The API reference (X-ID-DOC-1) in a real browser: Debian's Chromium opens `/docs` and Redoc,
 * loaded from the service itself under the page's CSP, renders the service's own document. Every
 * answer the browser gets comes from the service's origin: the reference works without internet.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { identityTarget, type IdentityTarget } from "../conformance/harness/targets.ts";
import { chromiumPath, launchChromium } from "./browser/chromium.ts";

let target: IdentityTarget;
let browser: Browser;

beforeAll(async () => {
  [browser, target] = await Promise.all([launchChromium(chromiumPath()), identityTarget()]);
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  await Promise.allSettled([browser?.close(), target?.close()]);
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
    await page.getByRole("heading", { name: /Identity Service/ }).first().waitFor({ timeout: 60_000 });
    // Operations sit in collapsed menu groups: present, not necessarily visible.
    await page.getByText("Token endpoint").first().waitFor({ state: "attached", timeout: 60_000 });
    expect(await page.getByText("X-ID-TOK-5").count()).toBeGreaterThan(0);
    expect([...origins]).toEqual([target.url]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
