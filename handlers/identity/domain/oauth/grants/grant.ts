/**
 * The shape of one grant type of the token endpoint, as oidc-provider's `lib/actions/grants/`:
 * its `grant_type` value, the form parameters it requires, and what it answers. The registry
 * (registry.ts) is what the endpoint dispatches on.
 */
import type { Application } from "../../../storage/applications.ts";
import type { TokenResponse } from "./issue.ts";
import type { GrantType } from "./registry.ts";

/** What a valid DPoP proof at the token endpoint binds the answer to (X-ID-DPOP-3): its key's thumbprint. */
export interface TokenBinding {
  jkt: string;
}

export interface Grant {
  /** The `grant_type` value (RFC 6749 §4.1.3, §6). */
  readonly grantType: GrantType;
  /** Form parameters that must be present and non-empty, checked before the client is authenticated. */
  readonly parameters: readonly string[];
  /** Exchanges the form of an authenticated client for tokens, or throws an OAuthError. `binding`: the request's DPoP key. */
  handle(app: Application, form: Readonly<Record<string, string>>, binding?: TokenBinding): Promise<TokenResponse>;
}
