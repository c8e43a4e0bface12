/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the
 * client signs a short JWT with a key it registered. Checked here: the signature against the
 * application's keys (ES256, RS256 or EdDSA only), `iss` = `sub` = its client id, `aud` naming
 * the token endpoint or the issuer, `exp` required and at most MAX_LIFETIME_SECONDS ahead, and
 * its `jti` used once until the assertion expires (ClientAssertionStore: the store's primary key
 * decides between concurrent uses). Every failure is the same `invalid_client` to the client.
 */
import { createHash } from "node:crypto";
import { createLocalJWKSet, decodeJwt, type JSONWebKeySet, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { Clock } from "../../../../server/clock.ts";
import type { Application } from "../../storage/applications.ts";
import type { ClientAssertionStore } from "../../storage/client-assertions.ts";
import { OAuthError } from "./errors.ts";

/** RFC 7523 §2.2. */
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** The algorithms an assertion may be signed with: asymmetric ones only (X-ID-CC-6). */
export const ASSERTION_ALGORITHMS = ["ES256", "RS256", "EdDSA"] as const;
/** How far ahead an assertion's `exp` may be (X-ID-CC-7): long lifetimes make replay windows. */
export const MAX_LIFETIME_SECONDS = 300;
/** Leeway for the client's clock on `exp`, `nbf` and `iat`. */
const CLOCK_SKEW_SECONDS = 30;

const refused = (why: string) => new OAuthError("invalid_client", `The client assertion is not valid: ${why}`);

/** The client id an assertion names (`iss`, or `sub`), read before it is verified to find the application. */
export function assertionClientId(assertion: string): string | undefined {
  try {
    const claims = decodeJwt(assertion);
    return typeof claims.iss === "string" ? claims.iss : typeof claims.sub === "string" ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

export interface ClientAssertionVerifier {
  /** Accepts the assertion of `app` once, or throws `invalid_client`. */
  verify(app: Application, assertion: string, keys: JSONWebKeySet | JWTVerifyGetKey): Promise<void>;
}

export function createClientAssertionVerifier(deps: {
  clock: Clock;
  /** Accepted `aud` values: the token endpoint URL and the issuer (X-ID-CC-7). */
  audiences: readonly string[];
  assertions: ClientAssertionStore;
}): ClientAssertionVerifier {
  const { clock, audiences, assertions } = deps;
  return {
    async verify(app, assertion, keys) {
      const now = clock.now();
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(assertion, typeof keys === "function" ? keys : createLocalJWKSet(keys), {
          algorithms: [...ASSERTION_ALGORITHMS],
          issuer: app.clientId,
          subject: app.clientId,
          audience: [...audiences],
          requiredClaims: ["exp", "jti"],
          currentDate: now,
          clockTolerance: CLOCK_SKEW_SECONDS,
        }));
      } catch (err) {
        throw refused(err instanceof Error ? err.message : "its signature or claims do not check.");
      }
      const exp = payload.exp as number;
      const nowSeconds = Math.floor(now.getTime() / 1000);
      if (exp - nowSeconds > MAX_LIFETIME_SECONDS) throw refused(`exp is more than ${MAX_LIFETIME_SECONDS} seconds ahead.`);
      if (typeof payload.jti !== "string" || payload.jti.length === 0 || payload.jti.length > 255) throw refused("jti is missing.");
      // Keyed by client and jti, hashed: one fixed-size key, and two clients' ids never collide.
      const jti = createHash("sha256").update(`${app.clientId}\u0000${payload.jti}`).digest("base64url");
      const first = await assertions.useOnce(
        { jti, application_id: app.id, expires_at: new Date((exp + CLOCK_SKEW_SECONDS) * 1000).toISOString() },
        now.toISOString(),
      );
      if (!first) throw refused("this assertion (its jti) was used already.");
    },
  };
}
