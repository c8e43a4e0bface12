/**
 * The seam every kind of second factor plugs into (X-ID-MFA-1). A kind owns its rows of the
 * factors table (`kind` column) and knows how to check a proof against one of them; the sign-in
 * step (factors-area.ts) asks each kind the user has, in turn, and records the kind's `amr`
 * values in the session. TOTP is `totp-kind.ts`; a passkey kind would check a WebAuthn assertion
 * (the proof's `assertion`) against its stored public key and answer `["hwk", "user"]` or
 * `["swk", "user"]` as its methods.
 */
import type { FactorRow } from "../../storage/schema.ts";

/** What the second-factor form sent: a one-time code, or (another kind) a signed assertion. */
export interface FactorProof {
  code?: string;
  assertion?: unknown;
}

export interface FactorKind {
  /** The `kind` column of its rows. */
  readonly kind: string;
  /** RFC 8176 values a successful check adds to the session's `amr` (besides `mfa`). */
  readonly amr: readonly string[];
  /**
   * Checks `proof` against the confirmed `factor` at `now`; true when it is accepted, which
   * records the use at once (a proof is accepted once: a conditional update decides).
   */
  check(factor: FactorRow, proof: FactorProof, now: Date): Promise<boolean>;
}
