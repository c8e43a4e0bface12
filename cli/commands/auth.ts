/** `rb login`, `rb logout`, `rb whoami`, `rb auth status`. */
import type { components } from "../../generated/sdk/types/repository.ts";
import { ApiClient } from "../api-client.ts";
import type { StoredConfig } from "../config-store.ts";
import { CliError, notLoggedIn, problemError, UsageError } from "../errors.ts";
import type { Context, ServerSource } from "../context.ts";
import { AGENT_TOKEN_VARIABLE, agentCredential, unverifiedClaims, USER_TOKEN_VARIABLE } from "../credentials.ts";
import { fields, json } from "../output.ts";
import { readLine, readSecret } from "../../server/terminal/prompt.ts";
import { DEVICE_ONLY_OPTIONS, deviceLogin } from "./device-login.ts";
import { discover, revokeAtIssuer } from "../identity-client.ts";

type Credentials = components["schemas"]["Credentials"];

export async function login(ctx: Context): Promise<void> {
  if (ctx.options.device === true) return deviceLogin(ctx);
  const deviceOnly = DEVICE_ONLY_OPTIONS.find((o) => ctx.options[o] !== undefined);
  if (deviceOnly) throw new UsageError(`--${deviceOnly} is for \`rb login --device\`.`);
  const stored = ctx.store.load();
  const email = await askEmail(ctx, stored.email);
  const password = await readSecret("Password: ", "password");
  if (!password) throw new UsageError("A password is required (typed at the prompt, or the first line of stdin).");

  const credentials: Credentials = { email, password };
  const res = await ctx.api.send((api) => api.POST("/auth/login", { body: credentials }));
  if (res.status === 401) throw new CliError("Wrong email or password.");
  if (res.status === 429)
    throw new CliError(`Too many failed attempts; try again in ${retryAfter(res.headers, res.problem?.detail)} seconds.`);
  if (res.status !== 200 || !res.body) throw problemError(res.status, res.problem);

  const previous = stored.server === ctx.api.baseUrl ? stored.tokens?.refreshToken : undefined;
  // A device login's issuer (X-CLI-8) is forgotten with its tokens: these are the server's own.
  await ctx.store.update(({ issuer: _replaced, ...c }) => ({ ...c, server: ctx.api.baseUrl, email, tokens: res.body }));
  // The session being replaced would otherwise stay usable for 30 days; end it (best effort), where it was issued.
  if (previous && stored.issuer)
    await discover(stored.issuer.url, stored.issuer.clientId)
      .then((at) => revokeAtIssuer(at, previous))
      .catch(() => undefined);
  else if (previous) await ctx.api.send((api) => api.POST("/auth/logout", { body: { refreshToken: previous } })).catch(() => undefined);

  if (ctx.json) ctx.io.out(json({ server: ctx.api.baseUrl, email, expiresAt: res.body.expiresAt }));
  else ctx.io.out(`Logged in to ${ctx.api.baseUrl} as ${email}.`);
  if (ctx.env[USER_TOKEN_VARIABLE]) ctx.io.err(`Note: ${USER_TOKEN_VARIABLE} is set, so commands send it, not this login.`);
}

export async function logout(ctx: Context): Promise<void> {
  const stored = ctx.store.load();
  if (!stored.tokens || !stored.server) {
    ctx.io.out(ctx.json ? json({ loggedOut: false }) : "Not logged in.");
    return;
  }
  // Revoke where the tokens came from, whatever --server says: that is where they are valid.
  const api = stored.server === ctx.api.baseUrl ? ctx.api : new ApiClient(stored.server);
  const { issuer } = stored;
  const refreshToken = stored.tokens.refreshToken;
  let failure: unknown;
  try {
    if (issuer && refreshToken) await revokeAtIssuer(await discover(issuer.url, issuer.clientId), refreshToken);
    else if (refreshToken) {
      const res = await api.send((http) => http.POST("/auth/logout", { body: { refreshToken } }));
      if (res.status !== 204) failure = problemError(res.status, res.problem);
    }
  } catch (err) {
    failure = err;
  }
  // Forget the tokens locally in any case: the user asked to be logged out on this machine.
  await ctx.store.update(({ issuer: _issuer, ...c }) => ({ ...c, tokens: undefined }));
  if (failure) {
    const why = failure instanceof Error ? failure.message : String(failure);
    throw new CliError(
      `Removed the stored tokens, but the server did not revoke the session: ${why}\nIt stays valid on the server until it expires.`,
    );
  }
  ctx.io.out(ctx.json ? json({ loggedOut: true, server: stored.server }) : `Logged out of ${stored.server}.`);
  if (ctx.env[USER_TOKEN_VARIABLE]) ctx.io.err(`Note: ${USER_TOKEN_VARIABLE} is still set, and commands still send it.`);
}

export async function whoami(ctx: Context): Promise<void> {
  const user = await ctx.session.call((api, auth) => api.GET("/auth/me", auth));
  if (ctx.json) ctx.io.out(json({ ...user, server: ctx.api.baseUrl }));
  else
    ctx.io.out(
      `Logged in to ${ctx.api.baseUrl} as ${user.email} (user ${user.id})${ctx.session.credential()?.from === "environment" ? `, with the token in ${USER_TOKEN_VARIABLE}` : ""}.`,
    );
}

/**
 * `rb auth status`: the server and where each token comes from (X-CLI-4), never a token. The user
 * token is checked with `GET /auth/me`; the agent token is only described (the agent's one request,
 * poll, would claim a build). Exits 1, saying why on stderr, when there is no token at all or the
 * user token is refused.
 */
export async function status(ctx: Context): Promise<void> {
  const config = ctx.store.load();
  const credential = ctx.session.credential();
  let user: { from: string; email?: string; id?: string; error?: string } | undefined;
  let failure: CliError | undefined;
  if (credential) {
    const from = credential.from === "environment" ? USER_TOKEN_VARIABLE : "config file";
    try {
      const me = await ctx.session.call((api, auth) => api.GET("/auth/me", auth));
      user = { from, email: me.email, id: me.id };
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      failure = err;
      user = { from, error: err.message };
    }
  }
  const agent = describeAgent(ctx, config);
  if (!credential && !agent.found) failure = notLoggedIn();

  if (ctx.json) {
    ctx.io.out(
      json({
        server: { url: ctx.server.url, from: ctx.server.source },
        user: user ?? null,
        agent: agent.found ?? null,
        configFile: ctx.store.path,
      }),
    );
  } else {
    ctx.io.out(
      fields([
        ["Server", `${ctx.server.url} (${SERVER_SOURCE[ctx.server.source]})`],
        ["User", user ? describeUser(user) : `not logged in (run \`rb login\`, or set ${USER_TOKEN_VARIABLE})`],
        ["Agent", agent.text],
        ["Config file", ctx.store.path],
      ]),
    );
  }
  if (failure) throw failure;
}

const SERVER_SOURCE: Record<ServerSource, string> = {
  "--server": "from --server",
  RB_SERVER: "from RB_SERVER",
  "config file": "the server of the last login, from the config file",
  default: "the default",
};

function describeUser(user: { from: string; email?: string; id?: string; error?: string }): string {
  const source = user.from === "config file" ? "the login stored in the config file" : `the token in ${user.from}`;
  return user.error ? `${source}, which could not be used (the reason is below)` : `${user.email} (user ${user.id}), with ${source}`;
}

/** The agent token this command would send, as `auth status` shows it. */
function describeAgent(
  ctx: Context,
  config: StoredConfig,
): { found?: { from: string; id?: string; name?: string; expiresAt?: string }; text: string } {
  const credential = agentCredential(ctx.env, config, ctx.api.baseUrl);
  if (credential?.from === "environment") {
    const claims = unverifiedClaims(credential.agentToken);
    const expiresAt = claims?.exp ? new Date(claims.exp * 1000).toISOString() : undefined;
    return {
      found: { from: AGENT_TOKEN_VARIABLE, ...(claims?.sub ? { id: claims.sub } : {}), ...(expiresAt ? { expiresAt } : {}) },
      text: `agent ${claims?.sub ?? "(not a token rb can read)"}, with the token in ${AGENT_TOKEN_VARIABLE}${expiresAt ? `, expires ${expiresAt}` : ""}`,
    };
  }
  if (credential) {
    const { id, name, expiresAt } = credential.agent;
    return {
      found: { from: "config file", id, name, expiresAt },
      text: `${name} (agent ${id}), stored in the config file, expires ${expiresAt}`,
    };
  }
  const stored = config.agent;
  if (stored) return { text: `none for this server (the stored agent ${stored.name} belongs to ${stored.server})` };
  return { text: `none (run \`rb agent register <name>\`, or set ${AGENT_TOKEN_VARIABLE})` };
}

async function askEmail(ctx: Context, remembered: string | undefined): Promise<string> {
  const given = ctx.options.email;
  if (typeof given === "string" && given !== "") return given;
  // Piped stdin carries the password; there is nobody to ask for the email.
  if (!process.stdin.isTTY)
    throw new UsageError('Give --email when stdin is not a terminal (e.g. `echo "$PW" | rb login --email you@example.com`).');
  const answer = (await readLine(remembered ? `Email [${remembered}]: ` : "Email: ", "email")).trim();
  const email = answer || remembered;
  if (!email) throw new UsageError("An email is required.");
  return email;
}

/** Retry-After is whole seconds (RFC 9110 §10.2.3); fall back to the number in the detail. */
function retryAfter(headers: Headers, detail: string | undefined): string {
  const header = headers.get("retry-after");
  if (header && /^\d+$/.test(header)) return header;
  return detail?.match(/(\d+) seconds/)?.[1] ?? "a few";
}
