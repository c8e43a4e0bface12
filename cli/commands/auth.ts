/** `rb login`, `rb logout`, `rb whoami`. */
import type { components } from "../../generated/sdk/types/repository.ts";
import { ApiClient } from "../api-client.ts";
import { CliError, problemError, UsageError } from "../errors.ts";
import type { Context } from "../context.ts";
import { json } from "../output.ts";
import { readLine, readSecret } from "../../server/terminal/prompt.ts";

type Credentials = components["schemas"]["Credentials"];

export async function login(ctx: Context): Promise<void> {
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
  await ctx.store.update((c) => ({ ...c, server: ctx.api.baseUrl, email, tokens: res.body }));
  // The session being replaced would otherwise stay usable for 30 days; end it (best effort).
  if (previous) await ctx.api.send((api) => api.POST("/auth/logout", { body: { refreshToken: previous } })).catch(() => undefined);

  if (ctx.json) ctx.io.out(json({ server: ctx.api.baseUrl, email, expiresAt: res.body.expiresAt }));
  else ctx.io.out(`Logged in to ${ctx.api.baseUrl} as ${email}.`);
}

export async function logout(ctx: Context): Promise<void> {
  const stored = ctx.store.load();
  if (!stored.tokens || !stored.server) {
    ctx.io.out(ctx.json ? json({ loggedOut: false }) : "Not logged in.");
    return;
  }
  // Revoke where the tokens came from, whatever --server says: that is where they are valid.
  const api = stored.server === ctx.api.baseUrl ? ctx.api : new ApiClient(stored.server);
  const refreshToken = stored.tokens.refreshToken;
  let failure: unknown;
  try {
    const res = await api.send((http) => http.POST("/auth/logout", { body: { refreshToken } }));
    if (res.status !== 204) failure = problemError(res.status, res.problem);
  } catch (err) {
    failure = err;
  }
  // Forget the tokens locally in any case: the user asked to be logged out on this machine.
  await ctx.store.update((c) => ({ ...c, tokens: undefined }));
  if (failure) {
    const why = failure instanceof Error ? failure.message : String(failure);
    throw new CliError(
      `Removed the stored tokens, but the server did not revoke the session: ${why}\nIt stays valid on the server until it expires.`,
    );
  }
  ctx.io.out(ctx.json ? json({ loggedOut: true, server: stored.server }) : `Logged out of ${stored.server}.`);
}

export async function whoami(ctx: Context): Promise<void> {
  const user = await ctx.session.call((api, auth) => api.GET("/auth/me", auth));
  if (ctx.json) ctx.io.out(json({ ...user, server: ctx.api.baseUrl }));
  else ctx.io.out(`Logged in to ${ctx.api.baseUrl} as ${user.email} (user ${user.id}).`);
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
