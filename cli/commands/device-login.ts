/**
 * `rb login --device` (X-CLI-8): signs in with an identity service that the repository server
 * trusts (X-RB-14), by the device authorization grant (RFC 8628), as `gh auth login` does: rb shows
 * a code and an address, the user approves in any browser, and rb stores the identity service's
 * tokens for the repository server, with the issuer and client they belong to, so that their
 * refreshes and their revocation go back to that issuer.
 */
import { bearer } from "../api-client.ts";
import type { StoredConfig, StoredIssuer, StoredTokens } from "../config-store.ts";
import type { Context } from "../context.ts";
import { runDeviceFlow } from "../device-flow.ts";
import { CliError, problemError, UsageError } from "../errors.ts";
import { discover, type IssuedTokens, revokeAtIssuer } from "../identity-client.ts";
import { json } from "../output.ts";

export const ISSUER_VARIABLE = "RB_ISSUER";
export const CLIENT_ID_VARIABLE = "RB_CLIENT_ID";
export const RESOURCE_VARIABLE = "RB_RESOURCE";

/** The OpenID scopes always asked for: who signed in, and a refresh token so the login outlives the hour. */
const BASE_SCOPE = "openid offline_access";
/** The repository service's scope at a trusted issuer (REPOSITORY_TRUSTED_SCOPE's default, X-RB-14). */
const REPOSITORY_SCOPE = "repository";

/** The options only `--device` takes: given without it, they are a usage error. */
export const DEVICE_ONLY_OPTIONS = ["issuer", "client-id", "scope", "resource"] as const;

interface DeviceSettings {
  issuer: string;
  clientId: string;
  scope: string;
  resource?: string;
}

/** Flags first, then the environment; every mistake is a usage error before any request (X-CLI-1). */
export function deviceSettings(ctx: Context): DeviceSettings {
  const text = (name: string) =>
    typeof ctx.options[name] === "string" && ctx.options[name] !== "" ? (ctx.options[name] as string) : undefined;
  if (ctx.options.email !== undefined)
    throw new UsageError("--email is for a password login; `rb login --device` signs in in the browser.");
  const issuer = text("issuer") ?? (ctx.env[ISSUER_VARIABLE] || undefined);
  const clientId = text("client-id") ?? (ctx.env[CLIENT_ID_VARIABLE] || undefined);
  if (!issuer) throw new UsageError(`\`rb login --device\` needs the identity service: --issuer URL (or ${ISSUER_VARIABLE}).`);
  if (!clientId) throw new UsageError(`\`rb login --device\` needs the identity application: --client-id ID (or ${CLIENT_ID_VARIABLE}).`);
  const resource = text("resource") ?? (ctx.env[RESOURCE_VARIABLE] || undefined);
  if (resource !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(resource);
    } catch {
      /* reported below */
    }
    if (!url || url.hash) throw new UsageError(`--resource must be an absolute URI without a fragment (RFC 8707), not "${resource}".`);
  }
  // An API scope is granted only together with a resource (X-ID-RES-2), so `repository` needs one.
  const scope = text("scope") ?? (resource ? `${BASE_SCOPE} ${REPOSITORY_SCOPE}` : BASE_SCOPE);
  return { issuer: issuer.replace(/\/+$/, ""), clientId, scope, ...(resource ? { resource } : {}) };
}

export async function deviceLogin(ctx: Context): Promise<void> {
  const settings = deviceSettings(ctx);
  // Ctrl-C while rb waits: stop polling and exit 130 with nothing stored (X-CLI-2).
  const controller = ctx.runtime.signal ? undefined : new AbortController();
  const signal = ctx.runtime.signal ?? controller!.signal;
  const onInterrupt = () => controller?.abort();
  if (controller) process.once("SIGINT", onInterrupt);
  let tokens: IssuedTokens;
  let issuer: Awaited<ReturnType<typeof discover>>;
  try {
    issuer = await discover(settings.issuer, settings.clientId, signal);
    tokens = await runDeviceFlow({
      issuer,
      scope: settings.scope,
      ...(settings.resource ? { resource: settings.resource } : {}),
      signal,
      now: ctx.runtime.now,
      sleep: ctx.runtime.sleep,
      // stderr, like gh: stdout stays the command's result (--json).
      show: ({ userCode, verificationUri, verificationUriComplete }) => {
        ctx.io.err(`Open ${verificationUriComplete ?? verificationUri} and enter ${userCode}`);
        if (verificationUriComplete) ctx.io.err(`(or open ${verificationUri} and type the code)`);
        ctx.io.err("Waiting for the approval in the browser… (Ctrl-C to cancel)");
      },
    });
  } finally {
    if (controller) process.removeListener("SIGINT", onInterrupt);
  }

  // The repository server must accept the token (it trusts this issuer, X-RB-14) before anything is stored.
  const me = await ctx.api.send((api) => api.GET("/auth/me", bearer(tokens.accessToken)));
  if (me.status !== 200 || !me.body) {
    if (tokens.refreshToken) await revokeAtIssuer(issuer, tokens.refreshToken).catch(() => undefined);
    const why = problemError(me.status, me.problem).message;
    throw new CliError(
      `Signed in with ${settings.issuer}, but the server at ${ctx.api.baseUrl} does not accept its tokens: ${why}\n` +
        "It must trust this issuer (REPOSITORY_TRUSTED_ISSUER) for the audience of the tokens (see --resource). Nothing was stored.",
    );
  }

  const stored: StoredIssuer = {
    url: settings.issuer,
    clientId: settings.clientId,
    ...(settings.resource ? { resource: settings.resource } : {}),
  };
  const pair: StoredTokens = {
    accessToken: tokens.accessToken,
    ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
    expiresAt: tokens.expiresAt,
  };
  let previous: StoredConfig = {};
  await ctx.store.update((c) => {
    previous = c;
    const { email: _forgotten, ...rest } = c;
    return { ...rest, server: ctx.api.baseUrl, tokens: pair, issuer: stored };
  });
  await endPreviousSession(ctx, previous);

  const user = me.body;
  if (ctx.json) ctx.io.out(json({ server: ctx.api.baseUrl, issuer: settings.issuer, user: user.id, expiresAt: pair.expiresAt }));
  else ctx.io.out(`Logged in to ${ctx.api.baseUrl} as user ${user.id}, with ${settings.issuer}.`);
  if (!pair.refreshToken)
    ctx.io.err("Note: the identity service granted no refresh token (offline_access), so this login ends when its access token expires.");
}

/** The session being replaced on this server would otherwise stay valid where it was issued: end it (best effort). */
async function endPreviousSession(ctx: Context, previous: StoredConfig): Promise<void> {
  const { issuer, tokens } = previous;
  const refreshToken = tokens?.refreshToken;
  if (previous.server !== ctx.api.baseUrl || !refreshToken) return;
  if (issuer)
    await discover(issuer.url, issuer.clientId)
      .then((at) => revokeAtIssuer(at, refreshToken))
      .catch(() => undefined);
  else await ctx.api.send((api) => api.POST("/auth/logout", { body: { refreshToken } })).catch(() => undefined);
}
