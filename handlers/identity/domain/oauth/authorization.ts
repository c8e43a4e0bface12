/**
 * The authorization endpoint's rules (RFC 6749 §4.1, RFC 7636, RFC 9207, X-ID-AZ-1/2): validating
 * a request, keeping it pending per `request_id`, consent, and issuing codes. Checks run in the
 * order of the spec: the two that make a redirect unsafe (client, redirect URI) first, as pages;
 * every other error travels back to the client as an error redirect with `state` and `iss`.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";
import { newOneTimeSecret, type SecretKeys, secretStorageKey } from "../../../../server/security/tokens.ts";
import { uuidv7 } from "../../../../server/ids.ts";
import type { Application } from "../../storage/applications.ts";
import type { UserRow } from "../../storage/schema.ts";
import type { IdentityStorage } from "../../storage/index.ts";
import type { RequestRow } from "../../storage/schema.ts";
import { OAuthError, type OAuthErrorCode } from "./errors.ts";
import { isValidChallenge, parseMethod } from "./pkce.ts";
import { redirectUriRefusal } from "./redirect-uris.ts";
import { parseScopes } from "./scopes.ts";
import { resourceRefusal, scopeRefusal } from "./resource-indicators.ts";
import type { Session } from "./sessions.ts";
import type { BackchannelLogout } from "./backchannel-logout.ts";
import { sessionSid } from "./session-id.ts";
import { endedByDisabling } from "../token-liveness.ts";
import { asksForTwoFactors } from "../factors/levels.ts";
import type { PushedParameters, PushedRequests } from "./pushed-requests.ts";

export const CODE_TTL_SECONDS = 600; // seed §8: 10 minutes
export const REQUEST_TTL_SECONDS = 600;
const MAX_STATE = 1024;
const MAX_NONCE = 1024;

export interface PendingRequest {
  id: string;
  application: Application;
  redirectUri: string;
  scopes: string[];
  state?: string;
  codeChallenge?: string;
  codeChallengeMethod?: "S256" | "plain";
  nonce?: string;
  prompt: string[];
  /** X-ID-RES-1: the resource (RFC 8707) the tokens are for. */
  resource?: string;
}

export type AuthorizeOutcome =
  /** Unknown client or redirect URI: a page, never a redirect (X-ID-AZ-1). */
  | { kind: "error-page"; message: string }
  | { kind: "redirect"; location: string }
  | { kind: "login"; request: PendingRequest }
  | { kind: "consent"; request: PendingRequest; user: UserRow }
  /** The session's sign-in had one factor, the request asks for two and the user has a second (X-ID-MFA-6). */
  | { kind: "second-factor"; request: PendingRequest; session: Session };

type Query = Record<string, string | string[] | undefined>;

/** The parameters an authorization request is made of: what a pushed request keeps (RFC 9126 §2.1). */
const REQUEST_PARAMETERS = [
  "response_type",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
  "nonce",
  "prompt",
  "max_age",
  "acr_values",
  "resource",
] as const;

/** What validating a request's parameters decided, before any session is looked at. */
type Validation =
  /** Unknown client or redirect URI: a page, never a redirect (X-ID-AZ-1). */
  | { kind: "error-page"; message: string }
  /** Any other error: sent back to the (trusted) redirect URI. */
  | { kind: "error"; redirectUri: string; state: string | undefined; code: OAuthErrorCode; description: string }
  | { kind: "valid"; request: PendingRequest; maxAge: number | undefined; acrValues: string | undefined };

/** A parameter's one value; REPEATED when sent twice or carrying U+0000, which no storage accepts (X-API-7). */
function singleOf(query: Query, name: string): string | undefined | typeof REPEATED {
  const v = query[name];
  const one = Array.isArray(v) ? (v.length === 1 ? v[0] : REPEATED) : v;
  return typeof one === "string" && one.includes("\u0000") ? REPEATED : one;
}

export function createAuthorization(deps: {
  storage: Pick<
    IdentityStorage,
    "applications" | "users" | "authorizationRequests" | "consents" | "grants" | "factors" | "organizationUsers" | "passkeys"
  >;
  clock: Clock;
  issuer: string;
  tokenKeys: SecretKeys;
  /** Pushed authorization requests (RFC 9126): taken by `request_uri`, required for some applications. */
  pushed: PushedRequests;
  /** Records which applications a session signed into (X-ID-LOGOUT-8). */
  logouts?: Pick<BackchannelLogout, "recordSignIn">;
}) {
  const { clock, issuer, tokenKeys, pushed } = deps;
  const { applications, users, authorizationRequests, consents, grants, factors, organizationUsers, passkeys } = deps.storage;
  const nowIso = () => clock.now().toISOString();

  /** RFC 6749 §4.1.2 / §4.1.2.1 plus RFC 9207 `iss`: parameters appended to the registered URI's own query. */
  function redirectTo(redirectUri: string, params: Record<string, string | undefined>): string {
    const url = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
    url.searchParams.append("iss", issuer);
    return url.toString();
  }

  const errorRedirect = (redirectUri: string, state: string | undefined, code: OAuthErrorCode, description: string) =>
    redirectTo(redirectUri, { error: code, error_description: description, state });

  /**
   * Checks an authorization request's parameters, in the order of the spec (X-ID-AZ-1): the same
   * checks for `GET /oauth/authorize` and for `POST /oauth/par` (X-ID-PAR-2). `pushed`: the
   * parameters came from a pushed request, so an application that requires one accepts them (X-ID-PAR-5).
   */
  async function validate(query: Query, options: { pushed: boolean }): Promise<Validation> {
    // A repeated parameter is an error (RFC 6749 §3.1); so is U+0000, which no storage accepts (X-API-7).
    const single = (name: string) => singleOf(query, name);
    const clientId = single("client_id");
    const redirectUri = single("redirect_uri");
    if (clientId === REPEATED || redirectUri === REPEATED)
      return { kind: "error-page", message: "The client_id or redirect_uri parameter is repeated or malformed." };
    if (!clientId) return { kind: "error-page", message: "The request has no client_id." };
    const application = clientId.length <= 255 ? await applications.findByClientId(clientId) : undefined;
    // A disabled application is refused like an unknown one (X-ID-TOK-5).
    if (!application?.enabled) return { kind: "error-page", message: "The application (client_id) is unknown or disabled." };
    if (!redirectUri) return { kind: "error-page", message: "The request has no redirect_uri." };
    // Checked before anything is stored or issued, session or not (X-ID-APP-1, X-ID-ADM-1).
    const refusal = redirectUriRefusal(application.redirectUris, redirectUri, { loopbackAnyPort: !application.firstParty });
    if (refusal) return { kind: "error-page", message: refusal };

    // From here on the redirect URI is safe: every error goes back to the client.
    const rawState = single("state");
    const state = rawState === REPEATED ? undefined : rawState;
    const fail = (code: OAuthErrorCode, description: string): Validation => ({ kind: "error", redirectUri, state, code, description });
    // RFC 8707 allows several resources; this server grants one per request (X-ID-RES-1): invalid_target.
    if (single("resource") === REPEATED) return fail("invalid_target", "One resource per authorization request.");
    const repeated = REQUEST_PARAMETERS.find((n) => single(n) === REPEATED);
    if (repeated) return fail("invalid_request", `The ${repeated} parameter is repeated or malformed.`);
    const value = (n: string) => single(n) as string | undefined;

    const responseType = value("response_type");
    if (!responseType) return fail("invalid_request", "response_type is required.");
    if (responseType !== "code") return fail("unsupported_response_type", "Only response_type=code is supported.");
    if (state !== undefined && state.length > MAX_STATE) return fail("invalid_request", `state must be at most ${MAX_STATE} characters.`);
    // X-ID-PAR-5: this application starts authorizations only from pushed requests.
    if (!options.pushed && pushed.required(application)) {
      return fail("invalid_request", "This application must push its authorization requests (POST /oauth/par) and send request_uri.");
    }

    // X-ID-RES-1: the API the tokens are for, if any; checked before the scopes that depend on it.
    // RFC 6749 §3.1: `resource=` with no value is treated as omitted.
    const resource = value("resource") || undefined;
    const targetRefusal = resource === undefined ? undefined : resourceRefusal(application, resource);
    if (targetRefusal) return fail("invalid_target", targetRefusal);
    const scopeParam = value("scope");
    const scopes = scopeParam ? parseScopes(scopeParam) : application.allowedScopes.filter((s) => s !== "offline_access");
    const scopeRefused = scopeRefusal(application, scopes, resource);
    if (scopeRefused) return fail("invalid_scope", scopeRefused);

    const challenge = value("code_challenge");
    const methodParam = value("code_challenge_method");
    const method = parseMethod(methodParam);
    if (!method) return fail("invalid_request", "code_challenge_method must be S256 or plain.");
    if (methodParam !== undefined && challenge === undefined)
      return fail("invalid_request", "code_challenge_method was sent without code_challenge.");
    if (challenge !== undefined && !isValidChallenge(challenge)) {
      return fail("invalid_request", "code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.");
    }
    if (challenge === undefined && application.clientType === "public")
      return fail("invalid_request", "PKCE (code_challenge) is required for public clients.");

    const nonce = value("nonce");
    if (nonce !== undefined && nonce.length > MAX_NONCE) return fail("invalid_request", `nonce must be at most ${MAX_NONCE} characters.`);
    const prompt = parseScopes(value("prompt") ?? "");
    if (prompt.some((p) => !["none", "login", "consent"].includes(p)) || (prompt.includes("none") && prompt.length > 1)) {
      return fail("invalid_request", "prompt must be none, login or consent (none alone).");
    }

    // X-ID-MFA-6: max_age (OpenID Connect Core §3.1.2.1) is a whole number of seconds.
    const maxAgeParam = value("max_age");
    if (maxAgeParam !== undefined && !/^\d{1,10}$/.test(maxAgeParam))
      return fail("invalid_request", "max_age must be a whole number of seconds.");
    const maxAge = maxAgeParam === undefined ? undefined : Number(maxAgeParam);

    const request: PendingRequest = {
      id: randomUUID(),
      application,
      redirectUri,
      scopes,
      ...(state !== undefined ? { state } : {}),
      ...(challenge !== undefined ? { codeChallenge: challenge, codeChallengeMethod: method } : {}),
      ...(nonce !== undefined ? { nonce } : {}),
      prompt,
      ...(resource !== undefined ? { resource } : {}),
    };
    return { kind: "valid", request, maxAge, acrValues: value("acr_values") };
  }

  /**
   * The parameters to authorize: the query's own, or those pushed under its `request_uri`, which
   * replace every other parameter of the query but `client_id` (RFC 9126 §4, X-ID-PAR-3, X-ID-PAR-4).
   */
  async function parametersOf(
    query: Query,
  ): Promise<{ kind: "error-page"; message: string } | { kind: "query"; query: Query; pushed: boolean }> {
    const requestUri = singleOf(query, "request_uri");
    // RFC 6749 §3.1: a parameter sent without a value is treated as omitted.
    if (requestUri === undefined || requestUri === "") return { kind: "query", query, pushed: false };
    const clientId = singleOf(query, "client_id");
    if (requestUri === REPEATED || clientId === REPEATED)
      return { kind: "error-page", message: "The client_id or request_uri parameter is repeated or malformed." };
    if (!clientId) return { kind: "error-page", message: "The request has no client_id." };
    const application = clientId.length <= 255 ? await applications.findByClientId(clientId) : undefined;
    if (!application?.enabled) return { kind: "error-page", message: "The application (client_id) is unknown or disabled." };
    // Unknown, expired, used and another client's look alike: the redirect URI is not known, so a page.
    const parameters = await pushed.take(application, requestUri);
    if (!parameters) {
      return {
        kind: "error-page",
        message:
          "The request_uri is unknown, expired or already used, or was pushed by another application. Go back to the application and try again.",
      };
    }
    return { kind: "query", query: { ...parameters, client_id: application.clientId }, pushed: true };
  }

  /** `GET /oauth/authorize`: error page, error redirect, login, consent, or straight back with a code (SSO). */
  async function begin(query: Query, session: Session | undefined): Promise<AuthorizeOutcome> {
    const parameters = await parametersOf(query);
    if (parameters.kind === "error-page") return parameters;
    const checked = await validate(parameters.query, { pushed: parameters.pushed });
    if (checked.kind === "error-page") return checked;
    if (checked.kind === "error") {
      return { kind: "redirect", location: errorRedirect(checked.redirectUri, checked.state, checked.code, checked.description) };
    }
    const { request, maxAge, acrValues } = checked;
    const { prompt, scopes, application } = request;
    const fail = (code: OAuthErrorCode, description: string): AuthorizeOutcome => ({
      kind: "redirect",
      location: errorRedirect(request.redirectUri, request.state, code, description),
    });

    // prompt=login, or a sign-in older than max_age (max_age=0 is prompt=login): the session does not count (X-ID-MFA-6).
    const stale =
      session !== undefined && maxAge !== undefined && (maxAge === 0 || clock.now().getTime() / 1000 - session.authTime > maxAge);
    const sessionUser = session && !prompt.includes("login") && !stale ? await users.findById(session.userId) : undefined;
    // A session does not sign in a user disabled for the application's organization (X-ID-UADM-3):
    // they are asked to sign in, and signing in shows them why not.
    const user = sessionUser && !(await organizationUsers.blockedFrom(application.id, sessionUser.id)) ? sessionUser : undefined;
    if (!user || !session) {
      if (prompt.includes("none")) return fail("login_required", "The user is not signed in.");
      await store(request);
      return { kind: "login", request };
    }
    // Step-up (X-ID-MFA-6): two factors asked for, one used, and the user has a second.
    if (asksForTwoFactors(acrValues) && !session.amr.includes("mfa") && (await hasConfirmedFactor(user.id))) {
      if (prompt.includes("none")) return fail("login_required", "The request asks for a second factor the session has not used.");
      await store(request);
      return { kind: "second-factor", request, session };
    }
    if (!prompt.includes("consent") && (await hasConsent(user.id, application, scopes))) {
      if (needsVerifiedEmail(application, user)) {
        if (prompt.includes("none")) return fail("interaction_required", "The user's email address is not verified.");
        await store(request);
        return { kind: "redirect", location: verifyEmailPath(request) };
      }
      return { kind: "redirect", location: await issueCode(request, user.id, session.authTime, session.amr, session.idHash) };
    }
    if (prompt.includes("none")) return fail("consent_required", "The user has not granted these scopes to this application.");
    await store(request);
    return { kind: "consent", request, user };
  }

  /**
   * `POST /oauth/par` (RFC 9126 §2): the client's request checked as the authorization endpoint
   * checks it (X-ID-PAR-2), then stored; an invalid one is the OAuthError of its first fault.
   */
  async function push(application: Application, form: Record<string, string>) {
    if (form.request_uri !== undefined) throw new OAuthError("invalid_request", "request_uri must not be pushed (RFC 9126 §2.1).");
    const parameters: PushedParameters = { client_id: application.clientId };
    for (const name of ["redirect_uri", ...REQUEST_PARAMETERS]) if (form[name] !== undefined) parameters[name] = form[name];
    const checked = await validate(parameters, { pushed: true });
    if (checked.kind === "error-page") throw new OAuthError("invalid_request", checked.message);
    if (checked.kind === "error") throw new OAuthError(checked.code, checked.description);
    return pushed.push(application, parameters);
  }

  /** A confirmed factor, or a passkey: both can answer a step-up's second step (X-ID-MFA-6, X-ID-PK-9). */
  async function hasConfirmedFactor(userId: string): Promise<boolean> {
    if ((await factors.list(userId)).some((f) => f.confirmed_at !== null)) return true;
    return (await passkeys.listByUser(userId)).length > 0;
  }

  async function store(r: PendingRequest): Promise<void> {
    const now = clock.now();
    // Expired requests are useless; pruning on write keeps the table small without a job.
    if (Math.random() < 0.02) await authorizationRequests.removeExpired(now.toISOString());
    await authorizationRequests.insert({
      id: r.id,
      application_id: r.application.id,
      redirect_uri: r.redirectUri,
      scopes: JSON.stringify(r.scopes),
      state: r.state ?? null,
      code_challenge: r.codeChallenge ?? null,
      code_challenge_method: r.codeChallengeMethod ?? null,
      nonce: r.nonce ?? null,
      prompt: r.prompt.join(" ") || null,
      resource: r.resource ?? null,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + REQUEST_TTL_SECONDS * 1000).toISOString(),
    });
  }

  /** The pending request `id`, if it exists and is under 10 minutes old. */
  async function findRequest(id: unknown): Promise<PendingRequest | undefined> {
    if (typeof id !== "string" || !/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const row = await authorizationRequests.find(id, nowIso());
    if (!row) return undefined;
    const application = await applications.findById(row.application_id);
    // Pending requests of an application disabled since are ended with its tokens (X-ID-TOK-5).
    if (!application?.enabled || endedByDisabling(row.created_at, application)) return undefined;
    return fromRow(row, application);
  }

  const fromRow = (row: RequestRow, application: Application): PendingRequest => ({
    id: row.id,
    application,
    redirectUri: row.redirect_uri,
    scopes: JSON.parse(row.scopes),
    ...(row.state !== null ? { state: row.state } : {}),
    ...(row.code_challenge
      ? { codeChallenge: row.code_challenge, codeChallengeMethod: row.code_challenge_method as "S256" | "plain" }
      : {}),
    ...(row.nonce !== null ? { nonce: row.nonce } : {}),
    prompt: row.prompt ? row.prompt.split(" ") : [],
    ...(row.resource ? { resource: row.resource } : {}),
  });

  /** X-ID-AZ-2: the first-party dashboard never asks; others when every scope was granted before. */
  async function hasConsent(userId: string, application: Application, scopes: string[]): Promise<boolean> {
    if (application.firstParty) return true;
    const consent = await consents.find(userId, application.id);
    if (!consent) return false;
    const granted: string[] = JSON.parse(consent.scopes);
    return scopes.every((s) => granted.includes(s));
  }

  /** Records that the user granted `scopes` to the application (added to what was granted before). */
  async function grantConsent(userId: string, application: Application, scopes: string[]): Promise<void> {
    const existing = await consents.find(userId, application.id);
    const granted: string[] = existing ? JSON.parse(existing.scopes) : [];
    await consents.save(userId, application.id, [...new Set([...granted, ...scopes])], nowIso());
  }

  /**
   * Issues a code for the request and returns the redirect that carries it. The code: 256 random
   * bits (after its issue time with IDENTITY_TOKEN_KEYS=time-ordered), stored only as a key made of
   * its SHA-256 (`secretStorageKey`), bound to client, redirect URI, scopes, user, nonce and PKCE
   * challenge, valid 10 minutes (ID-CODE-1).
   */
  async function issueCode(
    r: PendingRequest,
    userId: string,
    authTime: number,
    amr: readonly string[],
    sessionIdHash: string | undefined,
  ): Promise<string> {
    const now = clock.now();
    const code = newOneTimeSecret(tokenKeys, "", now.getTime());
    await grants.insertCode({
      code_hash: secretStorageKey(code),
      // Time-ordered: the exchange appends the grant at the end of its primary key (fewer pages per commit).
      grant_id: uuidv7(now.getTime()),
      application_id: r.application.id,
      user_id: userId,
      redirect_uri: r.redirectUri,
      scopes: JSON.stringify(r.scopes),
      code_challenge: r.codeChallenge ?? null,
      code_challenge_method: r.codeChallenge ? (r.codeChallengeMethod ?? "S256") : null,
      nonce: r.nonce ?? null,
      auth_time: new Date(authTime * 1000).toISOString(),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + CODE_TTL_SECONDS * 1000).toISOString(),
      consumed_at: null,
      amr: amr.join(" "),
      resource: r.resource ?? null,
      // X-ID-LOGOUT-6: the session's id for relying parties, in every ID token of this code's grant.
      sid: sessionIdHash ? sessionSid(sessionIdHash) : null,
    });
    // X-ID-LOGOUT-8: the session signed into this application; its end tells the application.
    if (sessionIdHash) await deps.logouts?.recordSignIn(sessionIdHash, r.application.id);
    // What the organization's admins see as the user's last sign-in (X-ID-UADM-2).
    await organizationUsers.recordSignIn(r.application.id, userId, now.toISOString());
    return redirectTo(r.redirectUri, { code, state: r.state });
  }

  /**
   * Finishes a pending request for a signed-in user who granted it: consent, code, request gone.
   * When the application requires a verified email address the user lacks, the consent is kept
   * and the answer is the verification page instead of a code (X-ID-EVF-5).
   */
  async function complete(
    r: PendingRequest,
    userId: string,
    authTime: number,
    addApplicationUser: (appId: string, userId: string) => Promise<unknown>,
    amr: readonly string[] = ["pwd"],
    /** The session the user is signed in with (X-ID-LOGOUT-6, X-ID-LOGOUT-8). */
    sessionIdHash?: string,
  ) {
    await grantConsent(userId, r.application, r.scopes);
    await addApplicationUser(r.application.id, userId);
    // X-ID-EVF-5: the request stays pending; the verification page continues it.
    if (r.application.requireVerifiedEmail) {
      const user = await users.findById(userId);
      if (user && needsVerifiedEmail(r.application, user)) return verifyEmailPath(r);
    }
    const location = await issueCode(r, userId, authTime, amr, sessionIdHash);
    await authorizationRequests.remove(r.id);
    return location;
  }

  /** ID-AZ-9: the user said no. */
  async function deny(r: PendingRequest): Promise<string> {
    await authorizationRequests.remove(r.id);
    return errorRedirect(r.redirectUri, r.state, "access_denied", "The user denied access.");
  }

  /** The authorization URL that starts this request again (the sign-up page's "I already have an account"). */
  function restartUrl(r: PendingRequest): string {
    const params = new URLSearchParams({
      client_id: r.application.clientId,
      redirect_uri: r.redirectUri,
      response_type: "code",
      scope: r.scopes.join(" "),
    });
    if (r.state !== undefined) params.set("state", r.state);
    if (r.codeChallenge) {
      params.set("code_challenge", r.codeChallenge);
      params.set("code_challenge_method", r.codeChallengeMethod ?? "S256");
    }
    if (r.nonce !== undefined) params.set("nonce", r.nonce);
    if (r.resource !== undefined) params.set("resource", r.resource);
    return `/oauth/authorize?${params.toString()}`;
  }

  return { begin, push, findRequest, hasConsent, complete, deny, restartUrl, errorRedirect };
}

const REPEATED = Symbol("repeated");

/** X-ID-EVF-5: the application requires a verified email address and the user's is not. */
const needsVerifiedEmail = (application: Application, user: UserRow) => application.requireVerifiedEmail && !user.email_verified;

/** The hosted page where an authorization waits for the user's address to be verified (X-ID-EVF-5). */
export const verifyEmailPath = (r: PendingRequest) => `/verify-email?request_id=${encodeURIComponent(r.id)}`;

export type Authorization = ReturnType<typeof createAuthorization>;
export { OAuthError };
