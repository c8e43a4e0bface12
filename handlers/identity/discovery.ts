/** RFC 8414 and OpenID Connect discovery documents, and the JWKS (RFC 7517). Public and cacheable. */
import { ASSERTION_ALGORITHMS } from "./domain/oauth/client-assertion.ts";
import { DPOP_ALGORITHMS } from "./domain/dpop/proof.ts";
import type { OAuthArea } from "./domain/oauth/oauth-area.ts";
import { KNOWN_SCOPES } from "./domain/oauth/scopes.ts";
import type { IdentityHandlers } from "./identity-handlers.ts";
import { JWKS_MAX_AGE_SECONDS } from "../../server/keys/schedule.ts";
import { ACR_VALUES_SUPPORTED } from "./domain/factors/levels.ts";

const CACHE = { "Cache-Control": `public, max-age=${JWKS_MAX_AGE_SECONDS}` };
const CLIENT_AUTH = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"];
/** What a `private_key_jwt` assertion may be signed with (X-ID-CC-6). */
const ASSERTION_ALGS = [...ASSERTION_ALGORITHMS];

/** The claims this server can put in ID tokens and UserInfo answers (ID-SCOPE-1, X-ID-TOK-4). */
const CLAIMS = [
  "sub",
  "iss",
  "aud",
  "exp",
  "iat",
  "auth_time",
  "nonce",
  "at_hash",
  "name",
  "given_name",
  "family_name",
  "updated_at",
  "email",
  "email_verified",
  "amr",
  "acr",
  "sid",
];

/**
 * The one metadata document (X-ID-DISC-1), served as RFC 8414 §2 and as OpenID Connect Discovery
 * 1.0 §3: both list the scope `openid`, so both carry the OpenID fields; a client that discovers
 * through RFC 8414 and finds no `id_token_signing_alg_values_supported` assumes RS256.
 */
function serverMetadata(oauth: Pick<OAuthArea, "issuer" | "keys" | "pushedRequestsRequired">) {
  const at = (path: string) => `${oauth.issuer}${path}`;
  return {
    issuer: oauth.issuer,
    authorization_endpoint: at("/oauth/authorize"),
    token_endpoint: at("/oauth/token"),
    jwks_uri: at("/.well-known/jwks.json"),
    scopes_supported: [...KNOWN_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code", "client_credentials"],
    token_endpoint_auth_methods_supported: CLIENT_AUTH,
    code_challenge_methods_supported: ["S256", "plain"],
    revocation_endpoint: at("/oauth/revoke"),
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH,
    introspection_endpoint: at("/oauth/introspect"),
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
    authorization_response_iss_parameter_supported: true,
    service_documentation: at("/docs"),
    userinfo_endpoint: at("/oauth/userinfo"),
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [oauth.keys.alg],
    claims_supported: CLAIMS,
    prompt_values_supported: ["none", "login", "consent"],
    acr_values_supported: [...ACR_VALUES_SUPPORTED],
    end_session_endpoint: at("/oauth/logout"),
    frontchannel_logout_supported: false,
    device_authorization_endpoint: at("/oauth/device_authorization"),
    token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
    revocation_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
    introspection_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGS,
    // RFC 9126 §5 (X-ID-PAR-1, X-ID-PAR-5).
    pushed_authorization_request_endpoint: at("/oauth/par"),
    require_pushed_authorization_requests: oauth.pushedRequestsRequired,
    // X-ID-DPOP-6: the algorithms a DPoP proof may be signed with (RFC 9449 §5.1).
    dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
    // X-ID-LOGOUT-7: logout tokens to each application's backchannelLogoutUri, always with `sid`.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
  };
}

export const discoveryHandlers: Pick<IdentityHandlers, "jwks" | "authorizationServerMetadata" | "openidConfiguration"> = {
  async jwks(_req, { oauth }) {
    // Every published key (X-ID-KEY-1): the one signing, the next one ahead of its use, and old ones until their tokens expire.
    const keys = (await oauth.keys.publishedKeys()).map(({ kid, publicJwk: { kty, crv, x, y, use, alg } }) => ({
      kty: kty ?? "EC",
      crv,
      x,
      y,
      kid,
      use,
      alg,
    }));
    return { status: 200, headers: CACHE, body: { keys } };
  },

  async authorizationServerMetadata(_req, { oauth }) {
    return { status: 200, headers: CACHE, body: serverMetadata(oauth) };
  },

  async openidConfiguration(_req, { oauth }) {
    return { status: 200, headers: CACHE, body: serverMetadata(oauth) };
  },
};
