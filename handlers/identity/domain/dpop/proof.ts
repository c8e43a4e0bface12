/**
 * DPoP proofs (RFC 9449 §4.3, X-ID-DPOP-1, X-ID-DPOP-2): one verifier used by the token endpoint
 * and by every operation that accepts an access token. A proof is a JWT of `typ` `dpop+jwt`,
 * signed with the private half of the public `jwk` in its header, naming the request it was made
 * for (`htm`, `htu`) and when (`iat`, on the injected clock). Each proof is accepted once: its
 * `jti` is recorded for the freshness window, by an insert whose conflict refuses the replay.
 */
import { createHash } from "node:crypto";
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, type JWK, jwtVerify, errors as joseErrors } from "jose";
import type { Clock } from "../../../../server/clock.ts";
import type { DpopProofStore } from "../../storage/dpop-proofs.ts";
import type { DpopNonces } from "./nonces.ts";

/** The proof algorithms accepted, as discovery publishes them (`dpop_signing_alg_values_supported`). */
export const DPOP_ALGORITHMS = ["ES256", "EdDSA", "RS256"] as const;
/** How far a proof's `iat` may be from now, either way, in seconds (X-ID-DPOP-1). */
export const DPOP_IAT_WINDOW_SECONDS = 60;
/** The longest `jti` accepted: enough for any random id, short enough to bound what is hashed. */
const MAX_JTI_LENGTH = 256;
/** Members that only a private or symmetric key has: a proof carrying one is refused. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

/** A proof that fails a rule; the message says which (no secret in it). */
export class DpopProofError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DpopProofError";
  }
}

/** A proof without the server's current nonce, when the deployment requires one (X-ID-DPOP-7): answered `use_dpop_nonce` with a fresh one. */
export class DpopNonceError extends DpopProofError {
  readonly nonce: string;

  constructor(nonce: string) {
    super("This server requires a DPoP nonce: retry with the nonce of the DPoP-Nonce header.");
    this.name = "DpopNonceError";
    this.nonce = nonce;
  }
}

/** What a valid proof establishes: the RFC 7638 thumbprint (SHA-256) of its key. */
export interface DpopProof {
  jkt: string;
}

/** The request a proof must name. `accessToken`: the token presented with it, whose hash `ath` must be. */
export interface DpopRequest {
  method: string;
  /** The endpoint's URL at the issuer, without query or fragment. */
  url: string;
  accessToken?: string;
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** `htu` as compared: scheme, host and path; query and fragment ignored (RFC 9449 §4.3 item 9). */
function comparableUrl(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
}

/** `nonces`: given when the deployment requires server nonces (IDENTITY_DPOP_NONCE_SECONDS). */
export function createDpopVerifier(deps: { clock: Clock; proofs: DpopProofStore; nonces?: DpopNonces | undefined }) {
  const { clock, proofs, nonces } = deps;

  async function verify(header: string | string[] | undefined, request: DpopRequest): Promise<DpopProof> {
    if (header === undefined) throw new DpopProofError("A DPoP proof is required: send it in the DPoP header.");
    // Node joins repeated headers with ", "; a compact JWT has no comma, so either way one proof only.
    if (typeof header !== "string" || header.includes(",")) throw new DpopProofError("Exactly one DPoP header is allowed.");
    let protectedHeader: ReturnType<typeof decodeProtectedHeader>;
    try {
      protectedHeader = decodeProtectedHeader(header);
    } catch {
      throw new DpopProofError("The DPoP proof is not a JWT.");
    }
    const { typ, alg, jwk } = protectedHeader;
    if (typ !== "dpop+jwt") throw new DpopProofError('The DPoP proof must have typ "dpop+jwt".');
    if (!alg || !(DPOP_ALGORITHMS as readonly string[]).includes(alg))
      throw new DpopProofError(`The DPoP proof must be signed with ${DPOP_ALGORITHMS.join(", ")}.`);
    if (!jwk || typeof jwk !== "object") throw new DpopProofError("The DPoP proof must carry its public key as jwk.");
    if (PRIVATE_MEMBERS.some((m) => m in jwk)) throw new DpopProofError("The DPoP proof's jwk must be a public key.");

    let payload: Record<string, unknown>;
    let jkt: string;
    try {
      const key = await importJWK(jwk as JWK, alg);
      ({ payload } = await jwtVerify(header, key, { typ: "dpop+jwt", algorithms: [alg], currentDate: clock.now() }));
      jkt = await calculateJwkThumbprint(jwk as JWK, "sha256");
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof TypeError)
        throw new DpopProofError("The DPoP proof's signature or key is invalid.");
      throw err;
    }

    const { jti, htm, htu, iat, ath } = payload;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) throw new DpopProofError("The DPoP proof needs a jti.");
    if (htm !== request.method.toUpperCase()) throw new DpopProofError("The DPoP proof's htm is not this request's method.");
    if (typeof htu !== "string" || comparableUrl(htu) !== comparableUrl(request.url))
      throw new DpopProofError("The DPoP proof's htu is not this endpoint's URL.");
    const nowSeconds = Math.floor(clock.now().getTime() / 1000);
    if (typeof iat !== "number" || Math.abs(nowSeconds - iat) > DPOP_IAT_WINDOW_SECONDS)
      throw new DpopProofError("The DPoP proof's iat is missing or outside the accepted window.");
    if (request.accessToken !== undefined) {
      if (typeof ath !== "string" || ath !== sha256(request.accessToken).toString("base64url"))
        throw new DpopProofError("The DPoP proof's ath does not match the access token.");
    }
    if (nonces && !nonces.accepts(payload.nonce)) throw new DpopNonceError(nonces.current());
    // Recorded last, once every other rule passed: a refused proof does not use up its jti.
    const proofKey = sha256(`${jkt}.${jti}`).toString("hex");
    const expiresAt = new Date((iat + DPOP_IAT_WINDOW_SECONDS) * 1000).toISOString();
    if (!(await proofs.record(proofKey, expiresAt))) throw new DpopProofError("This DPoP proof was already used.");
    return { jkt };
  }

  /** The nonce to send with every answer (`DPoP-Nonce`), when nonces are required. */
  const nonce = (): string | undefined => nonces?.current();

  return { verify, nonce };
}

export type DpopVerifier = ReturnType<typeof createDpopVerifier>;
