/**
 * A browserless driver of the identity service's real OAuth flow, over HTTP only: GET the
 * authorization URL, read the hosted page's CSRF token and request id, POST the login form, follow
 * the 303, take the code, exchange it with PKCE. Used by the OAuth conformance tests and, through
 * `adminTokenViaFlow`, by every test that needs an administration token (X-ID-ADM-1).
 *
 * It needs only the service's URL: the targets (targets.ts) sign a deployment's admin in with it,
 * and the fixtures that make applications and users (identity-fixtures.ts) build on it, never the
 * other way round.
 */
import { createHash, randomBytes } from "node:crypto";
import { readBody } from "./http.ts";

export const DASHBOARD_CLIENT_ID = "identity-dashboard";

/** A PKCE pair (RFC 7636): a 43-character verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  json: any;
  location: string | undefined;
}

/** A user agent with a cookie jar that follows nothing by itself: each hop is visible to the test. */
export class Browser {
  readonly cookies = new Map<string, string>();
  /** `send`: how requests go out (conformance/harness/client-address.ts makes one from another client address). */
  constructor(
    readonly baseUrl: string,
    private readonly send: typeof fetch = fetch,
  ) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async fetch(
    method: string,
    pathOrUrl: string,
    form?: Record<string, string> | URLSearchParams,
    headers: Record<string, string> = {},
  ): Promise<HttpResult> {
    const url = pathOrUrl.startsWith("http") ? pathOrUrl : `${this.baseUrl}${pathOrUrl}`;
    const h: Record<string, string> = { ...headers };
    if (this.cookies.size) h.cookie = this.cookieHeader();
    let body: string | undefined;
    if (form) {
      h["content-type"] = "application/x-www-form-urlencoded";
      body = (form instanceof URLSearchParams ? form : new URLSearchParams(form)).toString();
    }
    const res = await this.send(url, { method, headers: h, body, redirect: "manual" });
    this.remember(res);
    const { text, json } = await readBody(res);
    return { status: res.status, headers: res.headers, text, json, location: res.headers.get("location") ?? undefined };
  }

  get(path: string) {
    return this.fetch("GET", path);
  }

  post(path: string, form: Record<string, string> | URLSearchParams) {
    return this.fetch("POST", path, form);
  }
}

/** The hosted login form as a person fills it in on the page whose hidden fields are `f` (its CSRF token and request). */
export const loginForm = (f: { csrfToken: string; requestId: string }, who: { email: string; password: string }) => ({
  action: "login",
  csrf_token: f.csrfToken,
  request_id: f.requestId,
  email: who.email,
  password: who.password,
});

/** The hidden inputs of a hosted page's first form (CSRF token and request id). */
export function formFields(html: string): { csrfToken: string; requestId: string } {
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  return { csrfToken: field("csrf_token"), requestId: field("request_id") };
}

export interface AuthorizationParams {
  clientId: string;
  redirectUri: string;
  scope?: string;
  state?: string;
  challenge?: string;
  method?: string;
  nonce?: string;
  prompt?: string;
  responseType?: string;
  extra?: Record<string, string>;
}

export function authorizationPath(p: AuthorizationParams): string {
  const q = new URLSearchParams({ client_id: p.clientId, redirect_uri: p.redirectUri, response_type: p.responseType ?? "code" });
  if (p.scope !== undefined) q.set("scope", p.scope);
  if (p.state !== undefined) q.set("state", p.state);
  if (p.challenge !== undefined) q.set("code_challenge", p.challenge);
  if (p.method !== undefined) q.set("code_challenge_method", p.method);
  if (p.nonce !== undefined) q.set("nonce", p.nonce);
  if (p.prompt !== undefined) q.set("prompt", p.prompt);
  for (const [k, v] of Object.entries(p.extra ?? {})) q.append(k, v);
  return `/oauth/authorize?${q.toString()}`;
}

/** The query parameters of a redirect's Location. */
export const redirectParams = (location: string | undefined): URLSearchParams => new URL(location ?? "http://invalid/").searchParams;

export interface FlowResult {
  code: string;
  state: string | null;
  location: string;
  verifier: string;
  browser: Browser;
}

/**
 * Runs the hosted flow as a user would: authorization URL → login page → POST credentials → 303
 * with the code. With a signed-in `browser` (SSO) the server may answer 302 with the code at once,
 * or show the consent page, which is accepted.
 */
export async function authorizeWithPassword(
  baseUrl: string,
  o: {
    clientId: string;
    redirectUri: string;
    email: string;
    password: string;
    scope?: string;
    state?: string;
    nonce?: string;
    browser?: Browser;
    method?: "S256" | "plain";
    /** More authorization request parameters (for example `resource`, RFC 8707). */
    extra?: Record<string, string>;
  },
): Promise<FlowResult> {
  const browser = o.browser ?? new Browser(baseUrl);
  const { verifier, challenge } = pkcePair();
  const state = o.state ?? randomBytes(8).toString("hex");
  const start = await browser.get(
    authorizationPath({
      clientId: o.clientId,
      redirectUri: o.redirectUri,
      state,
      challenge: o.method === "plain" ? verifier : challenge,
      method: o.method ?? "S256",
      ...(o.scope !== undefined ? { scope: o.scope } : {}),
      ...(o.nonce !== undefined ? { nonce: o.nonce } : {}),
      ...(o.extra ? { extra: o.extra } : {}),
    }),
  );
  let final: HttpResult = start;
  if (start.status === 200) {
    const fields = formFields(start.text);
    final = /name="action" value="consent"/.test(start.text)
      ? await browser.post("/oauth/authorize", { action: "consent", csrf_token: fields.csrfToken, request_id: fields.requestId })
      : await browser.post("/oauth/authorize", loginForm(fields, o));
  }
  if (final.status !== 302 && final.status !== 303) {
    // The hosted page says why in its alert; the page's head says nothing.
    const alert = /<p role="alert">([^<]*)<\/p>/.exec(final.text)?.[1];
    throw new Error(`authorization did not redirect: ${final.status} ${alert ? `"${alert}" (as ${o.email})` : final.text.slice(0, 300)}`);
  }
  const params = redirectParams(final.location);
  const code = params.get("code");
  if (!code) throw new Error(`authorization redirect carries no code: ${final.location}`);
  return { code, state: params.get("state"), location: final.location!, verifier, browser };
}

/** `Authorization: Basic` for a client (RFC 6749 §2.3.1: each part form-urlencoded first). */
export const basicAuth = (clientId: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`;

/** POST /oauth/token with a form (and optional HTTP Basic credentials). */
export async function tokenRequest(
  baseUrl: string,
  form: Record<string, string>,
  basic?: { clientId: string; secret: string },
  path = "/oauth/token",
): Promise<HttpResult> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (basic) headers.authorization = basicAuth(basic.clientId, basic.secret);
  const res = await fetch(`${baseUrl}${path}`, { method: "POST", headers, body: new URLSearchParams(form).toString(), redirect: "manual" });
  const { text, json } = await readBody(res);
  return { status: res.status, headers: res.headers, text, json, location: undefined };
}

/** A client as the token endpoint knows it: public (client_id alone) or confidential (with its secret). */
export interface OAuthClient {
  clientId: string;
  redirectUri: string;
  clientSecret?: string;
}

/** The token request that exchanges a flow's code (RFC 6749 §4.1.3, with RFC 7636's code_verifier). */
export const codeExchangeForm = (flow: { code: string; verifier: string }, client: OAuthClient): Record<string, string> => ({
  grant_type: "authorization_code",
  code: flow.code,
  redirect_uri: client.redirectUri,
  client_id: client.clientId,
  code_verifier: flow.verifier,
  ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
});

/** Exchanges a flow's code (public client: client_id + verifier; confidential: + client_secret). */
export function exchangeCode(baseUrl: string, flow: FlowResult, client: OAuthClient) {
  return tokenRequest(baseUrl, codeExchangeForm(flow, client));
}

/**
 * An administration token the way scripts get one (X-ID-ADM-1): the first-party public client
 * `identity-dashboard` and its one redirect URI, the dashboard on the service's public URL
 * (the code is read from the redirect's Location), Authorization Code + PKCE.
 */
export async function adminTokenViaFlow(target: { url: string }, admin: { email: string; password: string }): Promise<string> {
  return (await dashboardTokensViaFlow(target, admin)).access_token;
}

/** The dashboard client's whole token answer for `scope` (with `offline_access`, a refresh token too), by the same flow. */
export async function dashboardTokensViaFlow(
  target: { url: string },
  user: { email: string; password: string },
  scope = "openid profile email",
): Promise<{ access_token: string; refresh_token?: string; id_token?: string }> {
  const redirectUri = `${target.url}/dashboard`;
  const flow = await authorizeWithPassword(target.url, {
    clientId: DASHBOARD_CLIENT_ID,
    redirectUri,
    email: user.email,
    password: user.password,
    scope,
  });
  const res = await exchangeCode(target.url, flow, { clientId: DASHBOARD_CLIENT_ID, redirectUri });
  if (res.status !== 200) throw new Error(`dashboard token exchange failed: ${res.status} ${res.text}`);
  return res.json;
}
