/**
 * X-CLI-8 `rb login --device` against the real identity service (the device authorization grant,
 * RFC 8628) and a repository service that trusts it (X-RB-14), both in this process. The CLI's
 * `main` runs here with an injected runtime: its waits advance the identity service's ManualClock
 * instead of sleeping, and the test approves or denies the device on the hosted /device page as a
 * signed-in user would, between two polls. Runs on SQLite, and on PostgreSQL with
 * CONFORMANCE_DATABASE_URL set. The tests share one config file and run in order: the refresh test
 * refreshes the login the first one stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as oauth from "oauth4webapi";
import { main } from "../../cli/main.ts";
import { ConfigStore } from "../../cli/config-store.ts";
import type { Runtime } from "../../cli/context.ts";
import { createApp, createUser, type TestApp } from "../../conformance/harness/identity-fixtures.ts";
import { authorizeWithPassword, type Browser } from "../../conformance/harness/oauth-flow.ts";
import { identityTarget, repositoryTarget, type IdentityTarget, type RepositoryTarget } from "../../conformance/harness/targets.ts";
import { discover, insecure } from "../../conformance/harness/oauth4webapi-flow.ts";

/** The repository API's resource indicator (RFC 8707): the audience identity names and the API repository checks. */
const AUDIENCE = "https://repository.example";

let identity: IdentityTarget;
let repository: RepositoryTarget;
/** A repository trusting identity for tokens made for AUDIENCE with the scope `repository` (its defaults). */
let apiRepository: RepositoryTarget;
let cli: TestApp;
let cliWithApi: TestApp;
let plain: TestApp;
let user: { email: string; password: string };
let xdg: string;

beforeAll(async () => {
  identity = await identityTarget();
  if (!identity.service) throw new Error("this test needs the in-process services (unset CONFORMANCE_IDENTITY_URL)");
  // The CLI is a public client (it keeps no secret) allowed the device grant.
  cli = await createApp(identity, { clientType: "public", deviceAuthorization: true, allowedScopes: ["openid", "offline_access"] });
  cliWithApi = await createApp(identity, {
    clientType: "public",
    deviceAuthorization: true,
    allowedScopes: ["openid", "offline_access"],
    resources: [AUDIENCE],
    apiScopes: ["repository"],
  });
  // An ordinary application the user signs in through, so the browser has an identity session.
  plain = await createApp(identity, { clientType: "public" });
  user = await createUser(identity);
  // Without a resource the access token's audience is the client id (X-ID-RES-3), and it carries `openid`.
  repository = await repositoryTarget({
    env: { REPOSITORY_TRUSTED_ISSUER: identity.url, REPOSITORY_TRUSTED_AUDIENCE: cli.clientId, REPOSITORY_TRUSTED_SCOPE: "openid" },
  });
  apiRepository = await repositoryTarget({ env: { REPOSITORY_TRUSTED_ISSUER: identity.url, REPOSITORY_TRUSTED_AUDIENCE: AUDIENCE } });
  xdg = mkdtempSync(join(tmpdir(), "rb-device-"));
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([repository?.close(), apiRepository?.close()]);
  await identity?.close();
  if (xdg) rmSync(xdg, { recursive: true, force: true });
});

const store = () => new ConfigStore(join(xdg, "rb", "config.json"));
const env = () => ({ XDG_CONFIG_HOME: xdg, RB_SERVER: repository.url });
const loginArgs = () => ["login", "--device", "--issuer", identity.url, "--client-id", cli.clientId];

/**
 * Runs rb. `onWait(n, ms)` is called at the n-th wait (1-based) of the poll loop, with the interval
 * rb chose: by default every wait advances the identity service's clock by that long, as real time would.
 * `server`: the repository server the command names (RB_SERVER), `repository` unless told.
 */
async function rb(
  argv: string[],
  o: { onWait?: (n: number, ms: number, stderr: string) => Promise<void> | void; signal?: AbortSignal; server?: string } = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const waits: number[] = [];
  const runtime: Runtime = {
    now: () => identity.clock!.now().getTime(),
    sleep: async (ms) => {
      waits.push(ms);
      if (o.onWait) await o.onWait(waits.length, ms, err.join("\n"));
      else identity.clock!.advance(ms);
    },
    ...(o.signal ? { signal: o.signal } : {}),
  };
  const code = await main(
    argv,
    { out: (t) => out.push(t), err: (t) => err.push(t) },
    { ...env(), ...(o.server ? { RB_SERVER: o.server } : {}) },
    runtime,
  );
  return { code, stdout: out.join("\n"), stderr: err.join("\n"), waits };
}

const userCodeIn = (stderr: string) => /and enter ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1];
const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;

/** A browser signed in to identity as the user. */
async function signedIn(): Promise<Browser> {
  const flow = await authorizeWithPassword(identity.url, {
    clientId: plain.clientId,
    redirectUri: plain.redirectUri,
    email: user.email,
    password: user.password,
  });
  return flow.browser;
}

/** Types the user code on /device and approves or denies, as the user would. */
async function decide(userCode: string, action: "approve" | "deny") {
  const browser = await signedIn();
  const form = await browser.get(`/device?user_code=${encodeURIComponent(userCode)}`);
  const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: userCode, action: "lookup" });
  expect(consent.status).toBe(200);
  const done = await browser.post("/device", { csrf_token: csrfOf(consent.text), user_code: userCode, action });
  expect(done.status).toBe(200);
}

/** Decides at the second wait: the first poll was `authorization_pending`. */
const decideAtSecondWait =
  (action: "approve" | "deny") =>
  async (n: number, ms: number, stderr: string): Promise<void> => {
    if (n === 2) await decide(userCodeIn(stderr)!, action);
    identity.clock!.advance(ms);
  };

describe("rb login --device (X-CLI-8)", () => {
  it("X-CLI-8 prints the address and the code, polls until approved, stores the issuer's tokens, and whoami works", async () => {
    const res = await rb(loginArgs(), { onWait: decideAtSecondWait("approve") });
    expect(res.stderr, res.stderr).toMatch(
      new RegExp(`Open ${identity.url}/device\\?user_code=[A-Z]{4}-[A-Z]{4} and enter [A-Z]{4}-[A-Z]{4}`),
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^Logged in to ${repository.url} as user [0-9a-f-]{36}, with ${identity.url}\\.$`));
    // Waited the issuer's interval (5 s) before each poll: pending once, then the tokens.
    expect(res.waits).toEqual([5000, 5000]);
    const config = store().load();
    expect(config.server).toBe(repository.url);
    expect(config.issuer).toEqual({ url: identity.url, clientId: cli.clientId });
    expect(config.tokens?.refreshToken).toBeTruthy();

    const me = await rb(["whoami"]);
    expect(me.code, me.stderr).toBe(0);
    expect(me.stdout).toMatch(/as [0-9a-f-]{36}@external\.invalid/);
  });

  it("X-CLI-8 an expired access token is refreshed at the issuer, as its client; logout revokes it there", async () => {
    const before = store().load();
    // The access token has expired as far as rb can tell: the next command refreshes first.
    store().save({ ...before, tokens: { ...before.tokens!, expiresAt: new Date(Date.now() - 1000).toISOString() } });
    const me = await rb(["whoami"]);
    expect(me.code, me.stderr).toBe(0);
    const after = store().load();
    expect(after.tokens!.refreshToken).not.toBe(before.tokens!.refreshToken); // rotated by identity
    expect(Date.parse(after.tokens!.expiresAt)).toBeGreaterThan(Date.now());

    const out = await rb(["logout"]);
    expect(out.code, out.stderr).toBe(0);
    expect(store().load().tokens).toBeUndefined();
    expect(store().load().issuer).toBeUndefined();
    // The refresh token is dead at the issuer too (RFC 7009), as oauth4webapi sees it.
    const as = await discover(identity.url);
    const client = { client_id: cli.clientId };
    const refreshed = oauth.refreshTokenGrantRequest(as, client, oauth.None(), after.tokens!.refreshToken!, insecure);
    await expect(refreshed.then((r) => oauth.processRefreshTokenResponse(as, client, r))).rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("X-CLI-8 slow_down adds 5 seconds to the interval for every later poll", async () => {
    const res = await rb(loginArgs(), {
      // The second wait is cut short (the clock does not move): that poll is early, and identity answers slow_down.
      onWait: async (n, ms, stderr) => {
        if (n === 3) await decide(userCodeIn(stderr)!, "approve");
        if (n !== 2) identity.clock!.advance(ms);
      },
    });
    expect(res.code, res.stderr).toBe(0);
    // Identity's interval grew to 10 s as well (X-ID-DEV-5): rb's next wait matches it, so that poll is in time.
    expect(res.waits).toEqual([5000, 5000, 10000]);
  });

  it("X-CLI-8 denied in the browser: exit 1, a clear line, nothing stored", async () => {
    const before = store().load();
    const res = await rb(loginArgs(), { onWait: decideAtSecondWait("deny") });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/The sign-in was denied in the browser\. Nothing was stored\.$/);
    expect(store().load()).toEqual(before);
  });

  it("X-CLI-8 the codes expire before a decision: exit 1 saying to start again", async () => {
    const res = await rb(loginArgs(), { onWait: (_n, ms) => identity.clock!.advance(ms + 600_000) });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/The code expired before the sign-in was approved\. Run `rb login --device` again\.$/);
  });

  it("X-CLI-8 Ctrl-C while waiting: exit 130, no message, nothing stored", async () => {
    const before = store().load();
    const controller = new AbortController();
    const res = await rb(loginArgs(), {
      signal: controller.signal,
      onWait: (n) => {
        if (n === 2) controller.abort();
      },
    });
    expect(res.code).toBe(130);
    expect(res.stderr).not.toMatch(/Interrupted/);
    expect(store().load()).toEqual(before);
  });

  it("X-CLI-8 --resource: tokens for the repository's audience with its scope, kept through a refresh", async () => {
    const args = ["login", "--device", "--issuer", identity.url, "--client-id", cliWithApi.clientId, "--resource", AUDIENCE];
    const res = await rb(args, { onWait: decideAtSecondWait("approve"), server: apiRepository.url });
    expect(res.code, res.stderr).toBe(0);
    const config = store().load();
    expect(config.issuer).toEqual({ url: identity.url, clientId: cliWithApi.clientId, resource: AUDIENCE });
    const claims = JSON.parse(Buffer.from(config.tokens!.accessToken.split(".")[1]!, "base64url").toString());
    expect(claims.aud).toBe(AUDIENCE);
    expect(claims.scope).toBe("openid offline_access repository"); // the default scope with a resource
    store().save({ ...config, tokens: { ...config.tokens!, expiresAt: new Date(Date.now() - 1000).toISOString() } });
    const me = await rb(["repo", "list"], { server: apiRepository.url });
    expect(me.code, me.stderr).toBe(0);
    expect(store().load().tokens!.refreshToken).not.toBe(config.tokens!.refreshToken);
  });

  it("X-CLI-8 a server that does not accept the issuer's tokens: exit 1 saying so, nothing stored", async () => {
    const before = store().load();
    // `repository` trusts identity for the client id as audience: a token made for AUDIENCE is not for it.
    const args = ["login", "--device", "--issuer", identity.url, "--client-id", cliWithApi.clientId, "--resource", AUDIENCE];
    const res = await rb(args, { onWait: decideAtSecondWait("approve") });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/does not accept its tokens: .*\n.*Nothing was stored\.$/);
    expect(store().load()).toEqual(before);
  });

  it("X-CLI-8 the device options are checked before any request", async () => {
    const noIssuer = await rb(["login", "--device", "--client-id", "x"]);
    expect(noIssuer.code).toBe(2);
    expect(noIssuer.stderr).toMatch(/needs the identity service: --issuer URL \(or RB_ISSUER\)/);
    const noClient = await rb(["login", "--device", "--issuer", identity.url]);
    expect(noClient.code).toBe(2);
    expect((await rb(["login", "--issuer", identity.url])).stderr).toMatch(/^--issuer is for `rb login --device`\.$/);
    expect((await rb([...loginArgs(), "--email", "a@example.com"])).code).toBe(2);
    expect((await rb([...loginArgs(), "--resource", "not a uri"])).code).toBe(2);
    const http = await rb(["login", "--device", "--issuer", "http://id.example.com", "--client-id", "x"]);
    expect(http.code).toBe(2);
    expect(http.stderr).toMatch(/https URL/);
  });

  it("X-CLI-8 an application without the device grant is refused with the issuer's reason", async () => {
    const res = await rb(["login", "--device", "--issuer", identity.url, "--client-id", plain.clientId]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/refused the request: unauthorized_client/);
  });
});
