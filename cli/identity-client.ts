/**
 * Talking to an identity service (an OAuth 2.0 / OpenID Connect issuer) for `rb login --device`
 * (X-CLI-8): its discovery document, the device authorization request, the token endpoint and the
 * revocation endpoint, all through oauth4webapi, which checks every answer as the RFCs say (the
 * discovery document's `issuer`, the token response's shape and its ID token). This module makes
 * one request per call and knows nothing of polling (device-flow.ts) or of the config file.
 */
import * as oauth from "oauth4webapi";
import { CliError } from "./errors.ts";

/** The issuer as oauth4webapi needs it: its metadata and this client. */
export interface Issuer {
  url: string;
  as: oauth.AuthorizationServer;
  client: oauth.Client;
}

/** What a token endpoint answered: the pair rb stores, and when the access token expires. */
export interface IssuedTokens {
  accessToken: string;
  refreshToken?: string;
  expiresAt: string;
}

const DEFAULT_TIMEOUT_MS = 15_000;

/**
 * `https`, or `http` on a loopback host (a development identity service): the same rule the
 * repository service applies to the issuer it trusts. oauth4webapi refuses plain http unless told.
 */
export function checkIssuerUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`Not an issuer URL: ${raw} (expected e.g. https://id.example.com).`, 2);
  }
  const loopback = url.hostname === "localhost" || url.hostname === "[::1]" || /^127\./.test(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback))
    throw new CliError(`The issuer must be an https URL (http only on this machine): ${raw}`, 2);
  if (url.search || url.hash) throw new CliError(`An issuer URL has no query or fragment: ${raw}`, 2);
  return url;
}

/** The request options of every call: plain http allowed on loopback only, a timeout, Ctrl-C. */
function requestOptions(url: URL, signal?: AbortSignal) {
  const timeout = AbortSignal.timeout(Number(process.env.RB_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS);
  return {
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    ...(url.protocol === "http:" ? { [oauth.allowInsecureRequests]: true } : {}),
  };
}

/** Reads `/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4); its `issuer` must be `issuerUrl`. */
export async function discover(issuerUrl: string, clientId: string, signal?: AbortSignal): Promise<Issuer> {
  const url = checkIssuerUrl(issuerUrl);
  const as = await call(issuerUrl, () =>
    oauth.discoveryRequest(url, requestOptions(url, signal)).then((r) => oauth.processDiscoveryResponse(url, r)),
  );
  return { url: issuerUrl, as, client: { client_id: clientId } };
}

/** RFC 8628 §3.1 as a public client (`client_id` only): the codes and where the user enters them. */
export async function requestDeviceCodes(issuer: Issuer, parameters: Record<string, string>, signal?: AbortSignal) {
  if (!issuer.as.device_authorization_endpoint)
    throw new CliError(
      `The identity service at ${issuer.url} offers no device authorization (its discovery document names no device_authorization_endpoint).`,
    );
  const url = new URL(issuer.url);
  return call(issuer.url, async () =>
    oauth.processDeviceAuthorizationResponse(
      issuer.as,
      issuer.client,
      await oauth.deviceAuthorizationRequest(issuer.as, issuer.client, oauth.None(), parameters, requestOptions(url, signal)),
    ),
  );
}

/**
 * One poll of the token endpoint (RFC 8628 §3.4): the tokens, or the OAuth error code the issuer
 * answered (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`, …) for the
 * caller to act on.
 */
export async function pollDeviceCode(
  issuer: Issuer,
  deviceCode: string,
  signal?: AbortSignal,
): Promise<{ tokens: IssuedTokens } | { error: string; description?: string }> {
  const url = new URL(issuer.url);
  return call(issuer.url, async () => {
    // No `resource` here: the device authorization carries it to the grant (X-ID-DEV-11).
    const response = await oauth.deviceCodeGrantRequest(issuer.as, issuer.client, oauth.None(), deviceCode, requestOptions(url, signal));
    try {
      return { tokens: issued(await oauth.processDeviceCodeResponse(issuer.as, issuer.client, response)) };
    } catch (err) {
      if (err instanceof oauth.ResponseBodyError)
        return { error: err.error, ...(err.error_description ? { description: err.error_description } : {}) };
      throw err;
    }
  });
}

/** The refresh token grant (RFC 6749 §6) as the client the pair was issued to; `undefined` when the issuer refused the token. */
export async function refreshAtIssuer(
  issuer: Issuer,
  refreshToken: string,
  resource: string | undefined,
): Promise<IssuedTokens | undefined> {
  const url = new URL(issuer.url);
  return call(issuer.url, async () => {
    const options = { ...requestOptions(url), ...(resource ? { additionalParameters: { resource } } : {}) };
    const response = await oauth.refreshTokenGrantRequest(issuer.as, issuer.client, oauth.None(), refreshToken, options);
    try {
      return issued(await oauth.processRefreshTokenResponse(issuer.as, issuer.client, response));
    } catch (err) {
      // invalid_grant: expired, revoked, or already used. The pair is dead either way.
      if (err instanceof oauth.ResponseBodyError && err.error === "invalid_grant") return undefined;
      throw err;
    }
  });
}

/** RFC 7009: revokes the refresh token (and so its grant) at the issuer, when it offers revocation. */
export async function revokeAtIssuer(issuer: Issuer, refreshToken: string): Promise<void> {
  if (!issuer.as.revocation_endpoint) return;
  const url = new URL(issuer.url);
  await call(issuer.url, async () =>
    oauth.processRevocationResponse(
      await oauth.revocationRequest(issuer.as, issuer.client, oauth.None(), refreshToken, {
        ...requestOptions(url),
        additionalParameters: { token_type_hint: "refresh_token" },
      }),
    ),
  );
}

function issued(answer: oauth.TokenEndpointResponse): IssuedTokens {
  const lifetime = typeof answer.expires_in === "number" ? answer.expires_in : 3600;
  return {
    accessToken: answer.access_token,
    ...(answer.refresh_token ? { refreshToken: answer.refresh_token } : {}),
    expiresAt: new Date(Date.now() + lifetime * 1000).toISOString(),
  };
}

/** Runs one exchange, turning what can go wrong on the way into one line for the user. */
async function call<T>(issuerUrl: string, exchange: () => Promise<T>): Promise<T> {
  try {
    return await exchange();
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (err instanceof Error && err.name === "AbortError") throw err;
    if (err instanceof oauth.ResponseBodyError)
      throw new CliError(
        `The identity service at ${issuerUrl} refused the request: ${err.error}${err.error_description ? ` (${err.error_description})` : ""}.`,
      );
    if (err instanceof Error && err.name === "TimeoutError")
      throw new CliError(`The identity service at ${issuerUrl} did not answer in time.`);
    const reason = err instanceof Error ? ((err.cause as { code?: string } | undefined)?.code ?? err.message) : String(err);
    throw new CliError(`Cannot use the identity service at ${issuerUrl}: ${reason}`);
  }
}
