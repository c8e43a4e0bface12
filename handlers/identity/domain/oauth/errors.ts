/**
 * OAuth errors made from their wire codes (RFC 6749 §4.1.2.1, §5.2; RFC 7009; OpenID Connect),
 * in the manner of node-oidc-provider's `E('invalid_grant')`. Domain code throws them; each
 * endpoint decides how they travel (JSON body, error redirect).
 */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "unsupported_response_type"
  | "access_denied"
  | "login_required"
  | "consent_required"
  | "interaction_required"
  | "unsupported_token_type"
  | "server_error"
  /** RFC 8707 §2: a `resource` the client may not ask tokens for. */
  | "invalid_target"
  // RFC 8628 §3.5, the device grant's polling answers (X-ID-DEV-5).
  | "authorization_pending"
  | "slow_down"
  | "expired_token"
  /** RFC 9449 §5: the DPoP proof sent to the token endpoint is missing, invalid or replayed. */
  | "invalid_dpop_proof"
  /** RFC 9449 §8: the server requires a nonce in the proof; the answer's `DPoP-Nonce` header carries it. */
  | "use_dpop_nonce";

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.name = "OAuthError";
    this.code = code;
  }

  /** RFC 6749 §5.2 body; the description is ASCII and carries no secret. */
  toBody(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.message };
  }
}

export const oauthError = (code: OAuthErrorCode) => (description: string) => new OAuthError(code, description);
export const invalidRequest = oauthError("invalid_request");
export const invalidClient = oauthError("invalid_client");
export const invalidGrant = oauthError("invalid_grant");
export const invalidScope = oauthError("invalid_scope");
