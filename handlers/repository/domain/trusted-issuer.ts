/**
 * The trusted issuer's access tokens (X-RB-14): the repository API as a resource server of an
 * identity service. A token is accepted only when every RFC 9068 §4 check passes: header `typ`
 * `at+jwt`, an asymmetric signature by a key of the issuer's JWKS (the algorithm is the key's,
 * never the token's choice: no `none`, no HMAC), `iss` exactly the configured issuer, `aud`
 * containing the configured audience, `exp` not passed on the service's clock, a `sub`, and the
 * configured scope among the token's `scope`. A token without that scope was not issued for this
 * API: it is 401 `invalid_token` like one for another audience, since every operation takes the
 * same scope and no token without it can call any of them.
 *
 * Discovery (OpenID Connect Discovery 1.0, else RFC 8414) is read once, when the first such token
 * arrives, and its `issuer` must be the configured one (RFC 8414 §3.3); a failed read is retried by
 * the next token. The JWKS is cached and fetched again when a token names a `kid` it does not hold
 * (the issuer rotated its keys), at most once per 30 s cooldown, and kept for JWKS_MAX_AGE_MS
 * (server/security/remote-key-set.ts). Outbound
 * rules: a timeout, no redirects, a size cap, and only `https` (or `http` on a loopback host).
 */
import { errors as joseErrors, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { Clock } from "../../../server/clock.ts";
import { unauthenticated } from "../../../server/domain/errors.ts";
import { createRemoteKeySet } from "../../../server/security/remote-key-set.ts";

/** REPOSITORY_TRUSTED_ISSUER, _AUDIENCE and _SCOPE. */
export interface TrustedIssuerSettings {
  issuer: string;
  audience: string;
  scope: string;
}

/** What a verified token of the trusted issuer says: who it is for. */
export interface TrustedClaims {
  issuer: string;
  subject: string;
}

const REALM = "repository";
const UNREACHABLE = "The access token's issuer is trusted, but its keys could not be fetched to verify it; try again later.";
const FETCH_TIMEOUT_MS = 5000;
/** How long the issuer's JWKS is kept before it is fetched again. */
const JWKS_MAX_AGE_MS = 10 * 60_000;
const DOCUMENT_MAX_BYTES = 256 * 1024;
/** Asymmetric JWS algorithms only: a key set's public key must never double as an HMAC secret. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/** `https`, or `http` on a loopback host (development): where keys may be fetched from. */
export function fetchableUrl(value: string): boolean {
  try {
    const url = new URL(value);
    const loopback = url.hostname === "localhost" || url.hostname === "[::1]" || /^127\./.test(url.hostname);
    return url.protocol === "https:" || (url.protocol === "http:" && loopback);
  } catch {
    return false;
  }
}

/** The discovery documents to try, in order: OpenID Connect Discovery §4, then RFC 8414 §3 (well-known before the issuer's path). */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return [`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${path}`];
}

/** A GET under the outbound rules: timeout, no redirect followed. */
const outboundFetch = (url: string, init: RequestInit = {}) =>
  fetch(url, { ...init, redirect: "error", signal: init.signal ?? AbortSignal.timeout(FETCH_TIMEOUT_MS) });

/** A JSON document under the outbound rules; undefined when the answer is not 200. */
async function fetchJson(url: string): Promise<unknown> {
  const res = await outboundFetch(url, { headers: { accept: "application/json" } });
  if (res.status !== 200) {
    await res.body?.cancel();
    return undefined;
  }
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > DOCUMENT_MAX_BYTES) throw new Error(`${url}: larger than ${DOCUMENT_MAX_BYTES} bytes`);
  const text = await res.text();
  if (text.length > DOCUMENT_MAX_BYTES) throw new Error(`${url}: larger than ${DOCUMENT_MAX_BYTES} bytes`);
  return JSON.parse(text);
}

async function readDiscovery(issuer: string): Promise<{ jwksUri: string }> {
  for (const url of discoveryUrls(issuer)) {
    const doc = (await fetchJson(url)) as { issuer?: unknown; jwks_uri?: unknown } | undefined;
    if (doc === undefined) continue;
    if (doc.issuer !== issuer) throw new Error(`${url}: the discovery document's issuer is not ${issuer}`);
    if (typeof doc.jwks_uri !== "string" || !fetchableUrl(doc.jwks_uri)) throw new Error(`${url}: no usable jwks_uri`);
    return { jwksUri: doc.jwks_uri };
  }
  throw new Error(`${issuer}: no discovery document (OpenID Connect or RFC 8414)`);
}

export interface TrustedIssuerOptions {
  clock: Clock;
  /** Told when discovery or the JWKS cannot be read (the token is refused meanwhile). */
  onFetchError?: (err: unknown) => void;
}

export function createTrustedIssuer(settings: TrustedIssuerSettings, o: TrustedIssuerOptions) {
  let keySet: Promise<JWTVerifyGetKey> | undefined;

  /** The issuer's key set, discovered once; a failure is forgotten, so the next token tries again. */
  function keys(): Promise<JWTVerifyGetKey> {
    keySet ??= readDiscovery(settings.issuer).then(({ jwksUri }) =>
      createRemoteKeySet(jwksUri, {
        clock: o.clock,
        maxAgeMs: JWKS_MAX_AGE_MS,
        fetchJson: async (url) => {
          const body = await fetchJson(url);
          if (body === undefined) throw new Error(`${url}: the JWKS answer was not 200`);
          return body;
        },
      }),
    );
    keySet.catch(() => {
      keySet = undefined;
    });
    return keySet;
  }

  const refuse = (detail: string) => unauthenticated(REALM, detail, "invalid_token");

  /** The verified token's issuer and subject, or 401 `invalid_token` saying which check failed. */
  async function verify(token: string): Promise<TrustedClaims> {
    let getKey: JWTVerifyGetKey;
    try {
      getKey = await keys();
    } catch (err) {
      o.onFetchError?.(err);
      throw refuse(UNREACHABLE);
    }
    let scope: unknown;
    let subject: string;
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer: settings.issuer,
        audience: settings.audience,
        typ: "at+jwt",
        algorithms: ALGORITHMS,
        currentDate: o.clock.now(),
        requiredClaims: ["sub", "exp"],
      });
      scope = payload.scope;
      subject = String(payload.sub);
    } catch (err) {
      if (err instanceof joseErrors.JOSEError && !keySetProblem(err)) throw refuse(describe(err));
      // Not a verdict on the token: the key set could not be fetched (a timeout, a refused connection, an answer that is not a JWKS).
      o.onFetchError?.(err);
      throw refuse(UNREACHABLE);
    }
    // OpenID Connect Core §2: a `sub` is at most 255 ASCII characters (the link's key column holds that much).
    if (subject.length > 255) throw refuse("The access token's sub claim is longer than 255 characters.");
    const scopes = typeof scope === "string" ? scope.split(" ") : [];
    if (!scopes.includes(settings.scope))
      throw refuse(`The access token does not carry the scope \`${settings.scope}\` this API requires; ask the identity service for it.`);
    return { issuer: settings.issuer, subject };
  }

  return { issuer: settings.issuer, verify };
}

/** jose's errors that are about fetching the key set (a timeout, a non-200 answer, a body that is no JWKS), not about the token. */
const keySetProblem = (err: InstanceType<typeof joseErrors.JOSEError>) =>
  err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid || err.constructor === joseErrors.JOSEError;

/** Which check a token of the trusted issuer failed, in words for the client's developer. */
function describe(err: InstanceType<typeof joseErrors.JOSEError>): string {
  if (err instanceof joseErrors.JWTExpired) return "The access token expired.";
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === "aud") return "The access token was not issued for this API (aud claim).";
    if (err.claim === "typ") return "The access token is not an RFC 9068 access token (typ must be at+jwt).";
    return `The access token is not valid here (${err.claim} claim).`;
  }
  return "The access token is malformed or its signature is invalid.";
}

export type TrustedIssuer = ReturnType<typeof createTrustedIssuer>;
