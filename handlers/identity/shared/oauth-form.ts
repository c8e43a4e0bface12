/**
 * What the OAuth endpoints that answer in RFC 6749 §5.2 terms share (the token, revocation,
 * introspection and device authorization endpoints): reading the form body as single string
 * values, and an OAuth error as its JSON answer. Every answer of these endpoints carries
 * `Cache-Control: no-store` and `Pragma: no-cache`.
 */
import type { RequestHeaders } from "../../../server/http/handler-types.ts";
import { HttpResponseError } from "../../../server/http/problem.ts";
import { REALM } from "../domain/access-tokens.ts";
import { ClientAuthError } from "../domain/oauth/client-auth.ts";
import { invalidRequest, type OAuthError } from "../domain/oauth/errors.ts";

export const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" } as const;

/**
 * The form as single string values: repeated (array), nested (object), NUL-carrying or oversized
 * values are `invalid_request`. `maxLength` is the longest value of each parameter as the
 * endpoint's contract states it: the contract check cannot refuse these itself, since these
 * endpoints answer every contract failure in RFC 6749 terms by running their own checks on the
 * raw form.
 */
export function readOAuthForm(body: unknown, headers: RequestHeaders, maxLength: Readonly<Record<string, number>>): Record<string, string> {
  const type = String(headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
  if (type !== "application/x-www-form-urlencoded" || !body || typeof body !== "object" || Array.isArray(body)) {
    throw invalidRequest("The body must be application/x-www-form-urlencoded.");
  }
  const form: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    if (typeof value !== "string") throw invalidRequest(`The ${key} parameter is repeated or malformed.`);
    if (value.includes("\u0000")) throw invalidRequest(`The ${key} parameter contains a NUL character.`);
    const max = maxLength[key];
    // In code points, as JSON Schema's maxLength counts (a UTF-16 length can only be larger).
    if (max !== undefined && value.length > max && [...value].length > max)
      throw invalidRequest(`The ${key} parameter is longer than ${max} characters.`);
    form[key] = value;
  }
  return form;
}

/** OAuthError → its RFC 6749 §5.2 answer (X-ID-TOK-3): 401 for invalid_client (with the Basic challenge when Basic was tried), 400 otherwise. */
export function oauthErrorResponse(err: OAuthError): HttpResponseError {
  if (err.code === "invalid_client") {
    const headers: Record<string, string> = { ...NO_STORE };
    if (err instanceof ClientAuthError && err.basic) headers["WWW-Authenticate"] = `Basic realm="${REALM}"`;
    return new HttpResponseError(401, err.toBody(), { headers });
  }
  return new HttpResponseError(400, err.toBody(), { headers: { ...NO_STORE } });
}
