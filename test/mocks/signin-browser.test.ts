/**
 * `npm run mock` is enough for a front end to finish a sign-in: the real identity
 * service it starts with the demo data (scripts/mock-identity.ts, `identity-signin`) runs the
 * whole Authorization Code + PKCE flow for a single-page app in Chromium, with the documented
 * public client and user, while Prism's identity mock keeps answering every operation beside it.
 * The command is run as a developer runs it (scripts/mock.ts), on free ports. With the repository
 * mock beside them, a page's identity-signin token for the demo resource works on the repository mock
 * as it would on a repository service that trusts that issuer (X-MOCK-5).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "../../support/free-port.ts";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO } from "../../scripts/mock-identity.ts";
import { chromiumPath, launchChromium } from "../support/browser/chromium.ts";
import { startSpaServer, type SpaServer } from "../support/browser/spa-server.ts";

let browser: Browser;
let spa: SpaServer;
/** A page that signs in with identity-signin and calls the repository API (test/support/browser/spa.js with an audience). */
let repositorySpa: SpaServer;
let mock: ChildProcess;
let output = "";
let signinUrl: string;
let prismUrl: string;
let repositoryMockUrl: string;

/** Starts `scripts/mock.ts identity repository identity-signin` and resolves when it prints `ready`. */
async function startMockCommand(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/mock.ts", "identity", "repository", "identity-signin"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm run mock did not get ready within 60 s:\n${output}`)), 60_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (/^ready$/m.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`npm run mock exited with ${code}:\n${output}`));
    });
  });
  return child;
}

beforeAll(async () => {
  [spa, repositorySpa] = await Promise.all([startSpaServer(), startSpaServer()]);
  const [identityPort, repositoryPort, signinPort] = [await freePort(), await freePort(), await freePort()];
  signinUrl = `http://127.0.0.1:${signinPort}`;
  prismUrl = `http://127.0.0.1:${identityPort}`;
  repositoryMockUrl = `http://127.0.0.1:${repositoryPort}`;
  [browser, mock] = await Promise.all([
    launchChromium(chromiumPath()),
    startMockCommand({
      MOCK_PORTS: `identity=${identityPort},repository=${repositoryPort},identity-signin=${signinPort}`,
      CORS_ORIGINS: `${spa.origin},${repositorySpa.origin}`,
    }),
  ]);
  spa.configure({ issuer: signinUrl, clientId: DEMO.client.clientId });
  repositorySpa.configure({
    issuer: signinUrl,
    clientId: DEMO.client.clientId,
    resource: repositoryMockUrl,
    audience: DEMO.repository.resource,
  });
}, 300_000); // a fresh machine installs Chromium first (scripts/chromium.sh)

afterAll(async () => {
  if (mock && mock.exitCode === null) {
    const exited = new Promise((resolve) => mock.once("exit", resolve));
    mock.kill("SIGTERM"); // the command stops Prism and the identity service, then exits
    await exited;
  }
  await Promise.allSettled([browser?.close(), spa?.close(), repositorySpa?.close()]);
}, 30_000);

describe("npm run mock: a front end signs in", () => {
  it("prints the demo client, user and admin it was seeded with", () => {
    expect(output).toContain(`client_id     ${DEMO.client.clientId}`);
    expect(output).toContain(`user          ${DEMO.user.email} / ${DEMO.user.password}`);
    expect(output).toContain(`origins       ${spa.origin}, ${repositorySpa.origin}`);
    expect(output).toContain(`repository    resource=${DEMO.repository.resource} with scope ${DEMO.repository.scope}`);
  });

  it("a single-page app completes Authorization Code + PKCE against identity-signin with the demo client and user, fetching the token and UserInfo itself", async () => {
    const page = await browser.newPage();
    await page.goto(`${spa.origin}/`);
    await page.waitForURL((u) => u.origin === signinUrl && u.pathname === "/oauth/authorize");
    await page.getByRole("heading", { name: `Sign in to ${DEMO.client.name}` }).waitFor();
    await page.getByLabel("Email").fill(DEMO.user.email);
    await page.getByLabel("Password").fill(DEMO.user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.origin === spa.origin && u.pathname === "/callback");
    await page.getByText(/^(Signed in as|.* failed:)/).waitFor({ timeout: 30_000 });
    expect(await page.locator("#status").textContent()).toBe(`Signed in as ${DEMO.user.email}`);
    await page.close();
  }, 120_000);

  it("X-MOCK-5 the page's identity-signin token for the demo resource works on the repository mock: /auth/me and /repository answer", async () => {
    const page = await browser.newPage();
    await page.goto(`${repositorySpa.origin}/`);
    await page.waitForURL((u) => u.origin === signinUrl && u.pathname === "/oauth/authorize");
    await page.getByLabel("Email").fill(DEMO.user.email);
    await page.getByLabel("Password").fill(DEMO.user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((u) => u.origin === repositorySpa.origin && u.pathname === "/callback");
    await page.getByText(/^(Repository user|.* failed:)/).waitFor({ timeout: 30_000 });
    // Prism answers with the documented examples: the example user and its repositories.
    expect(await page.locator("#status").textContent()).toMatch(/^Repository user [0-9a-f-]{36}: /);
    await page.close();
  }, 120_000);

  it("X-MOCK-5 a token that names identity-signin as its issuer but is not signed by it is refused by the repository mock", async () => {
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const forged = `${part({ alg: "ES256", typ: "at+jwt" })}.${part({ iss: signinUrl, sub: "x", aud: DEMO.repository.resource })}.c2ln`;
    const res = await fetch(`${repositoryMockUrl}/auth/me`, { headers: { authorization: `Bearer ${forged}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    expect(((await res.json()) as { detail: string }).detail).toBe("The access token is malformed or its signature is invalid.");
  });

  it("Prism keeps serving the identity document beside it: an operation answers its documented example", async () => {
    const res = await fetch(`${prismUrl}/.well-known/jwks.json`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0);
  });
});
