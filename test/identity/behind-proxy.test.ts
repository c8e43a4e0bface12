/**
 * Behind a load balancer: Debian's nginx (scripts/nginx.sh) in front of two
 * identity processes on one PostgreSQL database (scripts/postgres.sh), round-robin, with
 * TRUST_PROXY naming nginx's address (127.0.0.1) and IDENTITY_PUBLIC_URL the proxy's URL.
 *
 * - The sign-in throttle counts the real client: clients are told apart by their loopback source
 *   address (127.0.1.x, conformance/harness/client-address.ts), which nginx appends to
 *   X-Forwarded-For. Before, every client behind the proxy was 127.0.0.1: one guesser's failures
 *   refused everyone.
 * - A forged X-Forwarded-For is worthless: sent directly to an instance (an untrusted peer) it is
 *   not read; sent through nginx it stays left of the address nginx appends.
 * - The issuer stays the configured one whatever Host or X-Forwarded-Host says.
 * - Chromium completes an authorization code flow (oauth4webapi client) through the proxy, its
 *   requests landing on both instances.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../support/free-port.ts";
import type { Browser as Chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchFrom, freshLoopbackAddress } from "../../conformance/harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../../conformance/harness/identity-fixtures.ts";
import { adminTokenViaFlow, authorizationPath, Browser, formFields, pkcePair } from "../../conformance/harness/oauth-flow.ts";
import { uniqueEmail, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { launchChromium } from "../support/browser/chromium.ts";
import { RelyingParty } from "../support/browser/relying-party.ts";
import { admin, killAll, serverEnv, startProcess, until, type ServerProcess } from "../support/server-process.ts";

const dir = mkdtempSync(join(tmpdir(), "behind-proxy-"));
const sh = (script: string, args: string[]) =>
  execFileSync("bash", [`scripts/${script}`, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

let proxyUrl = "";
let instances: Array<ServerProcess & { url: string }> = [];
let target: IdentityTarget;
let app: TestApp;
let chromium: Chromium | undefined;
let nginxStarted = false;
let postgresStarted = false;

beforeAll(async () => {
  const chromiumReady = launchChromium();
  void chromiumReady.catch(() => {});
  postgresStarted = true;
  sh("postgres.sh", ["start", join(dir, "pg")]);
  const databaseUrl = sh("postgres.sh", ["createdb", join(dir, "pg"), "behind_proxy"]);
  const ports = [await freePort(), await freePort()];
  nginxStarted = true;
  proxyUrl = sh("nginx.sh", ["start", join(dir, "nginx"), ...ports.map((p) => `127.0.0.1:${p}`)]);
  const env = (port: number) =>
    serverEnv(join(dir, "data"), {
      DATABASE_URL: databaseUrl,
      IDENTITY_PORT: String(port),
      IDENTITY_PUBLIC_URL: proxyUrl,
      TRUST_PROXY: "127.0.0.1",
      // Three failures from one address (any accounts) refuse that address.
      LOGIN_ADDRESS_MAX_FAILURES: "3",
    });
  // Both at once: migrations serialise on PostgreSQL (server/storage/migration-lock.ts).
  instances = ports.map((port) => ({ ...startProcess("app/main.ts", ["identity"], env(port)), url: `http://127.0.0.1:${port}` }));
  await until(() => instances.every((i) => i.urls.identity !== undefined), "both identity instances to listen", 60_000);

  const adminUser = { email: uniqueEmail("proxy-admin"), password: "a long admin password" };
  admin(env(ports[0]!), ["identity", "create-org", "Proxy Org", adminUser.email], `${adminUser.password}\n`);
  // A deployment as the conformance harness sees one: everything provisioned over HTTP, through the proxy.
  let organization: ReturnType<NonNullable<IdentityTarget["createOrganization"]>> | undefined;
  target = {
    url: proxyUrl,
    external: true,
    createOrganization: () =>
      (organization ??= (async () => {
        const token = await adminTokenViaFlow(target, adminUser);
        const get = async (path: string) =>
          (await (await fetch(`${proxyUrl}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { id: string };
        const [org, me] = await Promise.all([get("/api/organizations/current"), get("/api/users/me")]);
        return { organizationId: org.id, admin: { ...adminUser, userId: me.id } };
      })()),
    close: async () => {},
  };
  app = await createApp(target);
  chromium = await chromiumReady;
}, 120_000);

afterAll(async () => {
  await chromium?.close().catch(() => {});
  await Promise.all(
    instances.map(async (i) => {
      i.child.kill("SIGTERM");
      await Promise.race([i.exited, new Promise((r) => setTimeout(r, 10_000))]);
    }),
  );
  killAll();
  if (nginxStarted) sh("nginx.sh", ["stop", join(dir, "nginx")]);
  if (postgresStarted) sh("postgres.sh", ["stop", join(dir, "pg")]);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const pkce = pkcePair();

/** One password attempt on the hosted login page, from `address`, at `base` (the proxy unless said), with extra headers. */
async function signIn(address: string, email: string, password: string, o: { base?: string; headers?: Record<string, string> } = {}) {
  const from = fetchFrom(address);
  const send = ((input: string | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(o.headers ?? {})) headers.set(k, v);
    return from(input, { ...init, headers });
  }) as typeof fetch;
  const b = new Browser(o.base ?? proxyUrl, send);
  const f = formFields(
    (await b.get(authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkce.challenge }))).text,
  );
  return b.post("/oauth/authorize", { action: "login", csrf_token: f.csrfToken, request_id: f.requestId, email, password });
}

/** A guesser at `address` spends the address's failures on emails nobody registered, until it is refused. */
async function exhaust(address: string) {
  for (let i = 0; i < 3; i++) expect((await signIn(address, uniqueEmail("nobody"), "a guess")).status).toBe(400);
  const refused = await signIn(address, uniqueEmail("nobody"), "a guess");
  expect(refused.status).toBe(429);
}

describe("identity behind nginx (TRUST_PROXY)", () => {
  it("X-API-13 X-ID-AZ-3 the sign-in throttle counts the client nginx forwards: a guesser's failures refuse the guesser only, not other clients behind the same proxy", async () => {
    const user = await createUser(target);
    const guesser = freshLoopbackAddress();
    await exhaust(guesser);
    // The guesser is refused even with a right password: the address, not the account, is spent.
    expect((await signIn(guesser, user.email, user.password)).status).toBe(429);
    // Another client, through the same nginx, signs in.
    const res = await signIn(freshLoopbackAddress(), user.email, user.password);
    expect(res.status, res.text.slice(0, 300)).toBe(303);
    expect(res.location!.startsWith(app.redirectUri)).toBe(true);
  });

  it("X-API-13 X-ID-AZ-3 a forged X-Forwarded-For is ignored: from an untrusted peer it is not read, through nginx it stays left of the real address", async () => {
    const user = await createUser(target);
    const guesser = freshLoopbackAddress();
    await exhaust(guesser);
    // Straight to an instance, the guesser is its own peer address: still refused.
    expect((await signIn(guesser, user.email, user.password, { base: instances[0]!.url })).status).toBe(429);
    // Claiming to be someone else does not help the guesser, neither directly nor through nginx …
    const innocent = freshLoopbackAddress();
    for (const base of [instances[1]!.url, proxyUrl]) {
      expect((await signIn(guesser, user.email, user.password, { base, headers: { "x-forwarded-for": innocent } })).status).toBe(429);
    }
    // … and a third client claiming to be the guesser is not refused with it (a direct request from an untrusted peer).
    for (const base of [instances[0]!.url, proxyUrl]) {
      const res = await signIn(freshLoopbackAddress(), user.email, user.password, {
        base,
        headers: { "x-forwarded-for": guesser, forwarded: `for=${guesser}` },
      });
      expect(res.status).toBe(303);
    }
  });

  it("X-API-13 ID-DISC-1 the issuer is the configured IDENTITY_PUBLIC_URL, whatever Host or X-Forwarded-Host/-Proto a request carries", async () => {
    for (const headers of [{}, { host: "evil.example" }, { "x-forwarded-host": "evil.example", "x-forwarded-proto": "https" }]) {
      const res = await fetch(`${proxyUrl}/.well-known/openid-configuration`, { headers });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { issuer: string }).issuer).toBe(proxyUrl);
    }
  });

  it("ID-AZ-8 Chromium completes an authorization code flow through nginx, its requests served by both instances", async () => {
    const rp = new RelyingParty(proxyUrl, "Notes (behind nginx)");
    await rp.start();
    const context = await chromium!.newContext();
    try {
      const token = await adminTokenViaFlow(target, (await target.createOrganization!()).admin);
      const created = await fetch(`${proxyUrl}/api/applications`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: rp.name,
          clientType: "confidential",
          redirectUris: [rp.redirectUri],
          allowedScopes: ["openid", "profile", "email", "offline_access"],
        }),
      });
      expect(created.status).toBe(201);
      const body = (await created.json()) as { clientId: string; clientSecret: string };
      rp.register(body.clientId, body.clientSecret);
      const user = await createUser(target);
      const logged = instances.map((i) => i.logs.length);

      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(`${rp.url}/login`);
      await page.waitForURL((u) => u.origin === proxyUrl && u.pathname === "/oauth/authorize");
      await page.getByLabel("Email").fill(user.email);
      await page.getByLabel("Password").fill(user.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      // Consent if asked, then back at the client.
      const allow = page.getByRole("button", { name: "Allow" });
      await Promise.race([page.waitForURL((u) => u.origin === rp.url), allow.waitFor()]);
      if (new URL(page.url()).origin === proxyUrl) {
        await allow.click();
        await page.waitForURL((u) => u.origin === rp.url);
      }
      await page.getByRole("heading", { name: `Signed in to ${rp.name}` }).waitFor();
      expect(rp.failures).toEqual([]);
      expect(rp.signIns).toHaveLength(1);
      expect(rp.signIns[0]!.idClaims).toMatchObject({ iss: proxyUrl, aud: body.clientId, email: user.email });

      // The flow's requests (authorize, login, token, userinfo) were spread over both instances.
      const served = instances.map(
        (i, n) => i.logs.slice(logged[n]).filter((l) => typeof l.path === "string" && /^\/oauth\//.test(l.path as string)).length,
      );
      expect(
        served.every((count) => count > 0),
        `requests per instance: ${served.join(", ")}`,
      ).toBe(true);
    } finally {
      await context.close();
      await rp.close();
    }
  });
});
