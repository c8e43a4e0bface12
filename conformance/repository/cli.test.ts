/**
 * RB-7, RB-8, X-CLI-1..5: the command-line client `rb`, end to end. Each test runs `cli/bin.js` as
 * a child process against the service, with its own `$XDG_CONFIG_HOME` and the password on stdin,
 * or, for the prompts (X-CLI-2), on a pseudo-terminal where the test types the keys.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { repositoryApi } from "../harness/api.ts";
import { createRepository, queueBuild } from "../harness/repository-fixtures.ts";
import { repositoryLogin } from "../harness/worlds.ts";
import { createServer as createHttpServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { identityTarget, repositoryTarget, type Credentials, type RepositoryTarget } from "../harness/targets.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { runInTerminal } from "../harness/terminal.ts";
import { type Finished, runToEnd } from "../../support/run-to-end.ts";
import { identityOnDeployment, NEEDS, skipOnDeployment } from "../harness/skip.ts";

const BIN = fileURLToPath(new URL("../../cli/bin.js", import.meta.url));

let rb: RepositoryTarget;
beforeAll(async () => {
  rb = await repositoryTarget();
});
afterAll(async () => rb?.close());

const homes: string[] = [];
afterEach(() => {
  for (const dir of homes.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh configuration home, removed after the test. */
function freshHome(): { xdg: string; file: string } {
  const xdg = mkdtempSync(join(tmpdir(), "rb-cli-"));
  homes.push(xdg);
  return { xdg, file: join(xdg, "rb", "config.json") };
}

function rbCli(
  xdg: string,
  args: string[],
  options: { stdin?: string; server?: string; env?: Record<string, string | undefined> } = {},
): Promise<Finished> {
  return runToEnd(process.execPath, [BIN, ...args], {
    cwd: tmpdir(), // the client must not depend on the working directory
    // A variable given as undefined is left out.
    env: Object.fromEntries(
      Object.entries({ ...process.env, XDG_CONFIG_HOME: xdg, RB_SERVER: options.server ?? rb.url, RB_DEBUG: "1", ...options.env }).filter(
        ([, v]) => v !== undefined,
      ),
    ),
    ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
  });
}

/** `rb <args>` on a terminal of its own: the test types at its prompts. */
const rbTerminal = (xdg: string, args: string[]) =>
  runInTerminal([process.execPath, BIN, ...args], {
    cwd: tmpdir(),
    env: { ...process.env, XDG_CONFIG_HOME: xdg, RB_SERVER: rb.url, RB_DEBUG: "1" },
  });

const login = (xdg: string, user: Credentials = rb.user, server?: string) =>
  rbCli(xdg, ["login", "--email", user.email], { stdin: `${user.password}\n`, ...(server ? { server } : {}) });

const readConfig = (file: string) => JSON.parse(readFileSync(file, "utf8"));
const mode = (path: string) => statSync(path).mode & 0o777;

/** A user of the test's own where the target allows it, so queued builds do not cross tests. */
const ownUser = async () => (rb.createUser ? rb.createUser() : rb.user);

describe("rb login, token storage and refresh", () => {
  it("RB-8 `rb login` stores the token pair in $XDG_CONFIG_HOME/rb/config.json (file 0600, directory 0700) and later commands use it", async () => {
    const { xdg, file } = freshHome();
    const res = await login(xdg);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(rb.user.email);
    expect(mode(file)).toBe(0o600);
    expect(mode(join(xdg, "rb"))).toBe(0o700);
    const config = readConfig(file);
    expect(config).toMatchObject({ server: rb.url, email: rb.user.email });
    expect(decodeJwt(config.tokens.accessToken).payload.aud).toBe("repository-api");
    expect(decodeJwt(config.tokens.refreshToken).payload.aud).toBe("repository-refresh");
    expect(Date.parse(config.tokens.expiresAt)).toBe(decodeJwt(config.tokens.accessToken).payload.exp * 1000);
    // Tokens stay in the file: never on the screen.
    expect(res.stdout).not.toContain(config.tokens.accessToken);

    const who = await rbCli(xdg, ["whoami", "--json"]);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ email: rb.user.email, id: decodeJwt(config.tokens.accessToken).payload.sub });
    expect(who.stdout).not.toContain(config.tokens.refreshToken);
  });

  it("RB-8 an expired access token is refreshed transparently: the command works and the file holds a new token pair", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { xdg, file } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    const before = readConfig(file).tokens;
    rb.clock.advance(2 * 3600 * 1000);
    // Expired: raw, on purpose.
    expect((await request(rb.url, "GET", "/repository", { token: before.accessToken })).status).toBe(401);

    const res = await rbCli(xdg, ["repo", "list"]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const after = readConfig(file).tokens;
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(Date.parse(after.expiresAt)).toBeGreaterThan(Date.parse(before.expiresAt));
    expect(mode(file)).toBe(0o600);
    expect((await repositoryApi(rb, { token: after.accessToken }).GET("/auth/me")).response.status).toBe(200);
  });

  it("RB-8 `rb logout` revokes the refresh token on the server and deletes the stored tokens", async () => {
    const { xdg, file } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    const { refreshToken } = readConfig(file).tokens;
    const res = await rbCli(xdg, ["logout"]);
    expect(res.code).toBe(0);
    expect(readConfig(file).tokens).toBeUndefined();
    expect(readFileSync(file, "utf8")).not.toContain(refreshToken);
    expect(mode(file)).toBe(0o600);
    // Revoked by the logout: raw, on purpose.
    const refresh = await request(rb.url, "POST", "/auth/refresh", { json: { refreshToken } });
    expect(refresh.status).toBe(401);
    const who = await rbCli(xdg, ["whoami"]);
    expect(who.code).toBe(1);
    expect(who.stderr.trim()).toBe("Not logged in. Run `rb login` first.");
  });
});

describe("rb agent", () => {
  it("RB-7 `rb agent register` stores the agent token in the 0600 config file and `rb agent poll` uses it to claim a queued build", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    expect((await login(xdg, user)).code).toBe(0);
    const reg = await rbCli(xdg, ["agent", "register", "ci-runner"]);
    expect(reg.stderr).toBe("");
    expect(reg.code).toBe(0);
    const { agent } = readConfig(file);
    expect(agent).toMatchObject({ name: "ci-runner", server: rb.url });
    expect(decodeJwt(agent.agentToken).payload).toMatchObject({ aud: "build-agent", sub: agent.id });
    expect(reg.stdout).not.toContain(agent.agentToken);
    expect(mode(file)).toBe(0o600);

    const empty = await rbCli(xdg, ["agent", "poll"]);
    expect(empty.code).toBe(0);
    expect(empty.stdout.trim()).toBe("No build queued.");

    const api = repositoryApi(rb, { token: await repositoryLogin(rb, user) });
    const repo = await createRepository(api, `cli-${Date.now()}`);
    const build = await queueBuild(api, repo.id, "v2.0.0");
    const got = await rbCli(xdg, ["agent", "poll", "--json"]);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: build.id, ref: "v2.0.0", status: "running", agentId: agent.id });

    const done = await rbCli(xdg, ["agent", "report", build.id, "succeeded"]);
    expect(done.code).toBe(0);
    expect(
      (await api.GET("/repository/{repositoryId}/builds", { params: { path: { repositoryId: repo.id } } })).data!.items[0],
    ).toMatchObject({
      id: build.id,
      status: "succeeded",
    });
  });
});

describe("clear messages", () => {
  it("X-CLI-1 a wrong password says 'Wrong email or password.', exits 1 and stores nothing", async () => {
    const { xdg, file } = freshHome();
    const res = await login(xdg, { email: rb.user.email, password: `${rb.user.password}-wrong` });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe("Wrong email or password.");
    expect(() => statSync(file)).toThrow();
  });

  it("X-CLI-1 too many failed logins say how long to wait", async (ctx) => {
    if (!rb.createUser) return skipOnDeployment(ctx, NEEDS.ownUsers);
    const { xdg } = freshHome();
    const user = await rb.createUser();
    for (let i = 0; i < 10; i++) await repositoryApi(rb).POST("/auth/login", { body: { email: user.email, password: "wrong-password" } });
    const res = await login(xdg, user);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toMatch(/^Too many failed attempts; try again in \d+ seconds\.$/);
  });

  it("X-CLI-1 an unreachable server says 'Cannot reach the server at <url>: <reason>' and exits 1", async () => {
    const { xdg } = freshHome();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const res = await login(xdg, rb.user, url);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe(`Cannot reach the server at ${url}: connection refused (ECONNREFUSED)`);
  });

  it("X-CLI-1 a revoked session says to log in again, exits 1 and drops the stored tokens", async () => {
    const { xdg, file } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    const config = readConfig(file);
    // Revoke the family behind the client's back, as `rb logout` on another machine would.
    const logout = await repositoryApi(rb).POST("/auth/logout", { body: { refreshToken: config.tokens.refreshToken } });
    expect(logout.response.status).toBe(204);
    // The access token is a JWT and stays valid until it expires: let it expire.
    if (rb.clock) rb.clock.advance(2 * 3600 * 1000);
    else
      writeFileSync(file, JSON.stringify({ ...config, tokens: { ...config.tokens, expiresAt: new Date().toISOString() } }), {
        mode: 0o600,
      });
    const res = await rbCli(xdg, ["repo", "list"]);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe("Your session has expired or was revoked. Run `rb login` again.");
    expect(readConfig(file).tokens).toBeUndefined();
    expect(readConfig(file).email).toBe(rb.user.email);
  });

  it("X-CLI-1 a revoked agent token says to register the agent again and exits 1", async () => {
    const { xdg, file } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    expect((await rbCli(xdg, ["agent", "register", "doomed"])).code).toBe(0);
    const { agent, tokens } = readConfig(file);
    const deleted = await repositoryApi(rb, { token: tokens.accessToken }).DELETE("/buildagent/agents/{agentId}", {
      params: { path: { agentId: agent.id } },
    });
    expect(deleted.response.status).toBe(204);
    const res = await rbCli(xdg, ["agent", "poll"]);
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toBe("This agent's token was revoked or expired. Register the agent again.");
  });

  it("X-CLI-1 usage errors exit 2 without contacting the server", async () => {
    const { xdg } = freshHome();
    const res = await rbCli(xdg, ["agent", "report", "00000000-0000-4000-8000-000000000000", "done"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/succeeded" or "failed"/);
  });

  it("X-CLI-1 a bad --page or --page-size is a usage error (exit 2) before any request, not 'Cannot reach the server'", async () => {
    const { xdg } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    // Nothing listens there: a command that sent a request would say "Cannot reach the server" and exit 1.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    for (const [args, message] of [
      [["repo", "list", "--page", "0"], '--page must be a whole number from 1 to 1000000, not "0".'],
      [["repo", "list", "--page", "abc"], '--page must be a whole number from 1 to 1000000, not "abc".'],
      [["repo", "list", "--page-size", "101"], '--page-size must be a whole number from 1 to 100, not "101".'],
      [["agent", "list", "--page", "0"], '--page must be a whole number from 1 to 1000000, not "0".'],
    ] as const) {
      const res = await rbCli(xdg, [...args], { server: nowhere });
      expect({ args, code: res.code, stderr: res.stderr.trim() }).toEqual({ args, code: 2, stderr: message });
    }
    // And with the server there, the same command line with a good value works.
    expect((await rbCli(xdg, ["repo", "list", "--page", "1", "--page-size", "100"])).code).toBe(0);
  });

  it("X-CLI-1 an unknown option gets rb's own message and exit 2, not Node's parseArgs text", async () => {
    const { xdg } = freshHome();
    const res = await rbCli(xdg, ["repo", "list", "--bogus"]);
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe("Unknown option --bogus. Usage: rb repo list [--page N] [--page-size N]");
  });
});

describe("tokens from the environment", () => {
  it("X-CLI-4 RB_TOKEN: a user's access token from the environment works with no login and no config file, and is never stored", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    const token = await repositoryLogin(rb, user);
    const api = repositoryApi(rb, { token });
    const repo = await createRepository(api, `env-${Date.now().toString(36)}`);

    const listed = await rbCli(xdg, ["repo", "list", "--json"], { env: { RB_TOKEN: token } });
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).items.map((r: { id: string }) => r.id)).toContain(repo.id);
    const queued = await rbCli(xdg, ["build", "queue", repo.name, "--json"], { env: { RB_TOKEN: token } });
    expect(queued.code).toBe(0);
    expect(JSON.parse(queued.stdout)).toMatchObject({ repositoryId: repo.id, status: "queued" });
    // Nothing was written: no config file, no directory.
    expect(() => statSync(file)).toThrow();

    const refused = await rbCli(xdg, ["whoami"], { env: { RB_TOKEN: `${token}x` } });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      "The token in RB_TOKEN was refused: it expired or was revoked. Set a fresh access token, or unset RB_TOKEN to use `rb login`.",
    );
    expect(`${listed.stdout}${refused.stdout}${refused.stderr}`).not.toContain(token);
  });

  it("X-CLI-4 RB_AGENT_TOKEN: an agent on CI polls and reports with no `rb agent register` and no config file", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    const api = repositoryApi(rb, { token: await repositoryLogin(rb, user) });
    const registered = await api.POST("/buildagent/register", { body: { name: "ci-from-env" } });
    expect(registered.response.status).toBe(201);
    const { agentToken, agent } = registered.data!;
    // Builds form one queue for every agent: take what other tests left queued, so the next poll gets this build.
    const agentApi = repositoryApi(rb, { token: agentToken });
    while ((await agentApi.POST("/buildagent/poll")).response.status === 200);
    const repo = await createRepository(api, `ci-${Date.now().toString(36)}`);
    const build = await queueBuild(api, repo.id, "main");

    const env = { RB_AGENT_TOKEN: agentToken };
    const polled = await rbCli(xdg, ["agent", "poll", "--json"], { env });
    expect(polled.stderr).toBe("");
    expect(JSON.parse(polled.stdout)).toMatchObject({ id: build.id, status: "running", agentId: agent.id });
    const reported = await rbCli(xdg, ["agent", "report", build.id, "failed"], { env });
    expect(reported).toMatchObject({ code: 0, stdout: `Build ${build.id} marked failed.\n` });
    expect(() => statSync(file)).toThrow();

    const revoked = await api.DELETE("/buildagent/agents/{agentId}", { params: { path: { agentId: agent.id } } });
    expect(revoked.response.status).toBe(204);
    const refused = await rbCli(xdg, ["agent", "poll"], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      "The agent token in RB_AGENT_TOKEN was refused: it expired or the agent was revoked. Register the agent again and set its new token.",
    );
    expect(`${polled.stdout}${reported.stdout}${refused.stderr}`).not.toContain(agentToken);
  });

  it("X-CLI-4 precedence: --server over RB_SERVER over the config file, RB_TOKEN over the stored login; `rb auth status` says where each came from and prints no token", async () => {
    const { xdg, file } = freshHome();
    const stored = await ownUser();
    expect((await login(xdg, stored)).code).toBe(0);
    const other = rb.createUser ? await rb.createUser() : stored;
    const token = await repositoryLogin(rb, other);
    const nowhere = `http://127.0.0.1:${await freePort()}`;

    // --server wins over RB_SERVER (which points nowhere).
    const flag = await rbCli(xdg, ["auth", "status", "--json", "--server", rb.url], { server: nowhere });
    expect(flag.code).toBe(0);
    expect(JSON.parse(flag.stdout)).toMatchObject({
      server: { url: rb.url, from: "--server" },
      user: { from: "config file", email: stored.email },
      agent: null,
      configFile: file,
    });
    // Without either, the server of the last login (the config file).
    const fromConfig = await rbCli(xdg, ["auth", "status", "--json"], { env: { RB_SERVER: undefined } });
    expect(JSON.parse(fromConfig.stdout).server).toEqual({ url: rb.url, from: "config file" });

    // RB_TOKEN wins over the stored login; the text form names the variable.
    const env = { RB_TOKEN: token, RB_AGENT_TOKEN: "not-a-jwt" };
    const status = await rbCli(xdg, ["auth", "status"], { env });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Server:      ${rb.url} (from RB_SERVER)`);
    expect(status.stdout).toContain(`User:        ${other.email} (user `);
    expect(status.stdout).toContain("with the token in RB_TOKEN");
    expect(status.stdout).toContain("with the token in RB_AGENT_TOKEN");
    const who = await rbCli(xdg, ["whoami", "--json"], { env });
    expect(JSON.parse(who.stdout).email).toBe(other.email);
    const config = readConfig(file);
    for (const out of [flag, fromConfig, status, who])
      for (const secret of [token, config.tokens.accessToken, config.tokens.refreshToken])
        expect(`${out.stdout}${out.stderr}`).not.toContain(secret);

    // No token at all: exit 1, saying so.
    const { xdg: empty } = freshHome();
    const none = await rbCli(empty, ["auth", "status"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toContain("User:        not logged in");
    expect(none.stderr.trim()).toBe("Not logged in. Run `rb login` first.");
  });
});

describe("a --server that is not a repository service", () => {
  // It starts an identity service of its own and two `rb` processes: more time than one request's test.
  it("X-CLI-5 --server at the identity service says it is not a repository service, and names what it is", async (ctx) => {
    if (!rb.service && !identityOnDeployment())
      return skipOnDeployment(ctx, "needs an identity service: set CONFORMANCE_IDENTITY_URL beside CONFORMANCE_REPOSITORY_URL");
    const identity = await identityTarget();
    try {
      const { xdg } = freshHome();
      const res = await login(xdg, rb.user, identity.url);
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toBe(
        `The server at ${identity.url} is not a repository-and-build service: its API is "Identity Service". Check --server (or RB_SERVER).`,
      );
      const poll = await rbCli(xdg, ["agent", "poll"], { server: identity.url, env: { RB_AGENT_TOKEN: "x.y.z" } });
      expect(poll.stderr.trim()).toMatch(/is not a repository-and-build service: its API is "Identity Service"/);
    } finally {
      await identity.close();
    }
  }, 90_000);

  it("X-CLI-5 --server at an HTTP server that is no API says what it answered and that it serves no OpenAPI document", async () => {
    const page = createHttpServer((req, res) => {
      res.writeHead(req.url === "/" ? 200 : 404, { "content-type": "text/html" });
      res.end("<h1>It works</h1>");
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
    try {
      const { xdg } = freshHome();
      const res = await login(xdg, rb.user, url);
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toBe(
        `The server at ${url} is not a repository-and-build service: it answered 404 to /auth/login, and it serves no OpenAPI document at ${url}/openapi.json. Check --server (or RB_SERVER).`,
      );
    } finally {
      await new Promise((resolve) => page.close(resolve));
    }
  });

  it("X-CLI-5 a JSON 404 from a server whose document cannot be read (a proxy that forwards only the API) stays the problem's detail", async () => {
    const proxy = createHttpServer((req, res) => {
      if (req.url?.startsWith("/repository/")) {
        res.writeHead(404, { "content-type": "application/problem+json" });
        res.end(
          JSON.stringify({
            type: "about:blank",
            title: "Not Found",
            status: 404,
            code: "not_found",
            detail: "No repository with that id.",
          }),
        );
      } else {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not forwarded");
      }
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    try {
      const { xdg } = freshHome();
      const res = await rbCli(xdg, ["repo", "show", "00000000-0000-4000-8000-00000000beef"], { server: url, env: { RB_TOKEN: "t" } });
      expect(res.code).toBe(1);
      expect(res.stderr.trim()).toBe("No repository with that id.");
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("X-CLI-5 the repository service's own 404 stays the problem's detail", async () => {
    const { xdg } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    const res = await rbCli(xdg, ["repo", "show", "00000000-0000-4000-8000-00000000beef"]);
    expect(res.code).toBe(1);
    expect(res.stderr).not.toMatch(/not a repository-and-build service/);
  });
});

describe("prompts on a terminal", () => {
  it("X-CLI-2 Ctrl-C at the password prompt exits 130 with a newline and no message, and leaves the stored tokens untouched", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    expect((await login(xdg, user)).code).toBe(0);
    const before = readFileSync(file, "utf8");

    const term = rbTerminal(xdg, ["login", "--email", user.email]);
    await term.waitFor("Password: ");
    term.type("half-typed\u0003");
    const { code, screen } = await term.exited;
    expect(code).toBe(130);
    expect(screen).toBe("Password: \n");
    expect(readFileSync(file, "utf8")).toBe(before);
    // The session of the earlier login is still alive: nothing was revoked on the way out.
    const { refreshToken } = JSON.parse(before).tokens;
    expect((await repositoryApi(rb).POST("/auth/refresh", { body: { refreshToken } })).response.status).toBe(200);
  });

  it("X-CLI-2 Ctrl-C at the email prompt exits 130 without a message", async () => {
    const { xdg, file } = freshHome();
    const term = rbTerminal(xdg, ["login"]);
    await term.waitFor("Email: ");
    term.type("ada@exa\u0003");
    const { code, screen } = await term.exited;
    expect(code).toBe(130);
    expect(screen).not.toMatch(/error/i);
    expect(screen.endsWith("\n")).toBe(true);
    expect(() => statSync(file)).toThrow();
  });

  it("X-CLI-2 Ctrl-D on an empty password line cancels: exit 1, one line, nothing stored", async () => {
    const { xdg, file } = freshHome();
    const term = rbTerminal(xdg, ["login", "--email", rb.user.email]);
    await term.waitFor("Password: ");
    term.type("\u0004");
    const { code, screen } = await term.exited;
    expect(code).toBe(1);
    expect(screen).toBe("Password: \nCancelled: input ended (Ctrl-D) at the password prompt.\n");
    expect(() => statSync(file)).toThrow();
  });

  it("X-CLI-2 Ctrl-D after typed characters is not part of the password: Enter then logs in", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    const term = rbTerminal(xdg, ["login", "--email", user.email]);
    await term.waitFor("Password: ");
    term.type(`${user.password}\u0004`);
    term.type("\r");
    const { code, screen } = await term.exited;
    expect(screen).toBe(`Password: \nLogged in to ${rb.url} as ${user.email}.\n`);
    expect(code).toBe(0);
    expect(readConfig(file).email).toBe(user.email);
  });

  it("X-CLI-2 a pasted password, corrected with backspace, logs in and is never shown", async () => {
    const { xdg, file } = freshHome();
    const user = await ownUser();
    const term = rbTerminal(xdg, ["login", "--email", user.email]);
    await term.waitFor("Password: ");
    term.type(`${user.password}xy\u007f\u007f\r`); // one write, as a paste arrives
    const { code, screen } = await term.exited;
    expect(screen).toBe(`Password: \nLogged in to ${rb.url} as ${user.email}.\n`);
    expect(code).toBe(0);
    expect(readConfig(file).tokens.refreshToken).toBeTruthy();
  });
});

describe("repositories by name", () => {
  const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

  it("X-CLI-3 `rb repo show`, `rb build queue` and `rb build list` take a repository's name as well as its id", async () => {
    const { xdg } = freshHome();
    const user = await ownUser();
    expect((await login(xdg, user)).code).toBe(0);
    const api = repositoryApi(rb, { token: await repositoryLogin(rb, user) });
    const repo = await createRepository(api, unique("by-name"));
    // A newer repository of the same user, so the lookup has to pick the right one.
    expect((await api.POST("/repository", { body: { name: unique("other") } })).response.status).toBe(201);

    const shown = await rbCli(xdg, ["repo", "show", repo.name, "--json"]);
    expect(shown.stderr).toBe("");
    expect(JSON.parse(shown.stdout)).toEqual(repo);

    const queued = await rbCli(xdg, ["build", "queue", repo.name, "--ref", "v1.2.3", "--json"]);
    expect(queued.stderr).toBe("");
    expect(queued.code).toBe(0);
    const build = JSON.parse(queued.stdout);
    expect(build).toMatchObject({ repositoryId: repo.id, repositoryName: repo.name, ref: "v1.2.3", status: "queued" });

    const listed = await rbCli(xdg, ["build", "list", repo.name, "--json"]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).items.map((b: { id: string }) => b.id)).toEqual([build.id]);

    // The id keeps working.
    const byId = await rbCli(xdg, ["repo", "show", repo.id, "--json"]);
    expect(JSON.parse(byId.stdout)).toEqual(repo);
  });

  it("X-CLI-3 a name that matches no repository exits 1 saying so, and offers names that differ only in case", async () => {
    const { xdg } = freshHome();
    const user = await ownUser();
    expect((await login(xdg, user)).code).toBe(0);
    const api = repositoryApi(rb, { token: await repositoryLogin(rb, user) });
    const name = unique("Case");
    expect((await api.POST("/repository", { body: { name } })).response.status).toBe(201);

    const missing = unique("missing");
    const none = await rbCli(xdg, ["build", "queue", missing]);
    expect(none.code).toBe(1);
    expect(none.stderr.trim()).toBe(`No repository named "${missing}". \`rb repo list\` shows yours.`);

    const lower = name.toLowerCase();
    const near = await rbCli(xdg, ["repo", "show", lower]);
    expect(near.code).toBe(1);
    expect(near.stderr.trim()).toBe(`No repository named "${lower}". Did you mean "${name}"?`);
  });

  it("X-CLI-3 an argument that is neither a UUID nor a possible name is a usage error (exit 2)", async () => {
    const { xdg } = freshHome();
    expect((await login(xdg)).code).toBe(0);
    const res = await rbCli(xdg, ["build", "list", "my repo"]);
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe(
      `"my repo" is neither a repository id (a UUID) nor a repository name (letters, digits, ".", "_", "-"; 1-100 characters).`,
    );
  });

  it("X-CLI-3 the name is found past the first page of the list (the contract has no name filter)", async (ctx) => {
    // Needs a user of its own with over 100 repositories, and the clock to order them.
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, NEEDS.ownUsers);
    const { xdg } = freshHome();
    const user = await rb.createUser();
    expect((await login(xdg, user)).code).toBe(0);
    const api = repositoryApi(rb, { token: await repositoryLogin(rb, user) });
    // The oldest of 101 is last in the newest-first list: on page 2 at the largest page size, 100.
    const oldest = await createRepository(api, "oldest");
    rb.clock.advance(1000); // the others are newer, not tied with it
    for (let i = 0; i < 100; i++) expect((await api.POST("/repository", { body: { name: `newer-${i}` } })).response.status).toBe(201);
    expect((await api.GET("/repository", { params: { query: { page: 2, pageSize: 100 } } })).data!.items.map((r) => r.id)).toEqual([
      oldest.id,
    ]);

    const res = await rbCli(xdg, ["repo", "show", "oldest", "--json"]);
    expect(res.stderr).toBe("");
    expect(JSON.parse(res.stdout).id).toBe(oldest.id);
  });
});

/** A port nothing listens on: bind one, then let it go. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}
