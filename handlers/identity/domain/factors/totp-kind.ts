/** TOTP as a kind of second factor (X-ID-MFA-1): the sealed secret, the code, its time step accepted once. */
import type { SecretBox } from "../../../../server/security/secret-box.ts";
import type { FactorStore } from "../../storage/factors.ts";
import type { FactorKind } from "./factor-kind.ts";
import { totpStep } from "./totp.ts";

export const TOTP_KIND = "totp";

/** The one TOTP factor of a user has this id, so the table's key keeps it one. */
export const totpFactorId = (userId: string) => `totp:${userId}`;

export const lastStepOf = (value: number | string | null): number | undefined => (value === null ? undefined : Number(value));

export function createTotpKind(store: FactorStore, box: SecretBox): FactorKind {
  return {
    kind: TOTP_KIND,
    amr: ["otp"],
    async check(factor, proof, now) {
      if (typeof proof.code !== "string") return false;
      const step = await totpStep(
        box.open(factor.secret),
        proof.code.trim(),
        Math.floor(now.getTime() / 1000),
        lastStepOf(factor.last_step),
      );
      // The step is recorded by a conditional update: of two requests with one code, one wins (replay refused).
      return step !== undefined && (await store.acceptStep(factor.id, step, now.toISOString()));
    },
  };
}
