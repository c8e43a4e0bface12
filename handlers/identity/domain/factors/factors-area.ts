/**
 * The second-factor area (X-ID-MFA-*): enrolment of TOTP on the security page, recovery codes, the
 * second step of a sign-in (and of a step-up), its brute-force limits, and the policy that makes
 * a second factor required. Kinds of factor plug in through `FactorKind` (factor-kind.ts).
 */
import { hkdfSync } from "node:crypto";
import { DomainError } from "../../../../server/domain/errors.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import { createSecretBox } from "../../../../server/security/secret-box.ts";
import { createSignInThrottle, type SignInPolicy, type SignInRefusal } from "../../../../server/security/sign-in-throttle.ts";
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { FactorRow, UserRow } from "../../storage/schema.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import type { AuditEntry, RequestOrigin } from "../audit.ts";
import type { IdentityContext } from "../context.ts";
import type { FactorKind, FactorProof } from "./factor-kind.ts";
import { type FirstFactorMethod, withSecondFactor } from "./levels.ts";
import { looksLikeRecoveryCode, newRecoveryCode, RECOVERY_CODE_COUNT, recoveryCodeHash } from "./recovery-codes.ts";
import { createTotpKind, TOTP_KIND, totpFactorId } from "./totp-kind.ts";
import { newTotpSecret, totpStep, totpUri } from "./totp.ts";

/** How long the second step of a sign-in waits: the life of the authorization request it continues. */
export const CHALLENGE_TTL_SECONDS = 600;

/** `optional`: a user with a factor is asked for it; `required`: a user without one enrols first (X-ID-MFA-7). */
export type FactorPolicy = "optional" | "required";
export const FACTOR_POLICIES: readonly FactorPolicy[] = ["optional", "required"];

export interface FactorsSettings {
  /** The password sign-in policy (LOGIN_*), which second-factor attempts follow too (X-ID-MFA-8). */
  signIn: SignInPolicy;
}

/** The second step of a sign-in in flight, as its cookie finds it. */
export interface FactorChallenge {
  userId: string;
  requestId: string;
  /** The first factor's methods (`pwd`, `fed`; `otp mfa` never: the step adds them). */
  amr: string[];
  idHash: string;
}

/** What the sign-in's second step can ask `userId` for: an app's code, a recovery code, a passkey (X-ID-PK-9). */
export interface StepMethods {
  totp: boolean;
  recoveryCodes: boolean;
  passkey: boolean;
}

/** What the security page shows of the user's factors. */
export interface FactorStatus {
  totp: "off" | "pending" | "on";
  recoveryCodesLeft: number;
}

/** Where a factor change or check came from, for the audit log (X-ID-AUD-6): the request, and the application of a sign-in. */
export interface FactorAuditContext {
  origin?: RequestOrigin | undefined;
  applicationId?: string | undefined;
}

export type CheckOutcome = { refused: SignInRefusal } | { refused?: undefined; amr: string[] | undefined };

const invalidCode = () => new DomainError("invalid", "code_invalid", "The code is wrong or was used already.");

export function createFactorsArea(ctx: IdentityContext, accounts: AccountsArea, settings: FactorsSettings) {
  const store = ctx.storage.factors;
  // Sealed under a key of its own, derived from the server's sealing key: a TOTP secret and a webhook secret never share one.
  const box = createSecretBox(Buffer.from(hkdfSync("sha256", ctx.webhookSealingKey, Buffer.alloc(0), "identity second factors", 32)));
  const kinds: FactorKind[] = [createTotpKind(store, box)];
  // X-ID-MFA-8: the password throttle's policy and tables, keyed on the account's id under its own prefix.
  const throttle = createSignInThrottle(ctx.storage.signInThrottle, ctx.clock, settings.signIn);
  const throttleAccount = (userId: string) => `second-factor:${userId}`;
  const now = () => ctx.clock.now();
  const { transaction } = ctx.storage;

  /** An event of the user's own factors, by the user (X-ID-AUD-6). */
  const audited = (userId: string, via: FactorAuditContext, type: AuditEntry["type"], details: AuditEntry["details"] = {}): AuditEntry => ({
    type,
    actor: { type: "user", id: userId },
    userId,
    applicationId: via.applicationId,
    origin: via.origin,
    details,
  });

  const confirmedOf = (rows: FactorRow[]) => rows.filter((f) => f.confirmed_at !== null);

  async function hasFactor(userId: string): Promise<boolean> {
    return confirmedOf(await store.list(userId)).length > 0;
  }

  /** X-ID-PK-9: whether the user has a passkey, which serves as a second factor where one is asked for. */
  async function hasPasskey(userId: string): Promise<boolean> {
    return (await ctx.storage.passkeys.listByUser(userId)).length > 0;
  }

  /** The methods the second step offers `userId` (X-ID-MFA-4, X-ID-PK-9). */
  async function stepMethods(userId: string): Promise<StepMethods> {
    return {
      totp: await hasFactor(userId),
      recoveryCodes: (await store.unusedRecoveryCodes(userId)) > 0,
      passkey: await hasPasskey(userId),
    };
  }

  async function status(userId: string): Promise<FactorStatus> {
    const totp = (await store.list(userId)).find((f) => f.kind === TOTP_KIND);
    return {
      totp: !totp ? "off" : totp.confirmed_at ? "on" : "pending",
      recoveryCodesLeft: await store.unusedRecoveryCodes(userId),
    };
  }

  /** Starts (or restarts) TOTP enrolment: a new secret, unconfirmed until a code of it is entered (X-ID-MFA-2). */
  async function startTotp(user: UserRow, issuerName: string): Promise<{ secret: string; uri: string }> {
    const secret = newTotpSecret();
    const saved = await store.saveUnconfirmed({
      id: totpFactorId(user.id),
      user_id: user.id,
      kind: TOTP_KIND,
      secret: box.seal(secret),
      last_step: null,
      created_at: now().toISOString(),
      confirmed_at: null,
      last_used_at: null,
    });
    if (!saved) throw new DomainError("conflict", "factor_exists", "An authenticator app is set up already: remove it first.");
    return { secret, uri: totpUri(secret, issuerName, user.email) };
  }

  /** The pending enrolment's secret and URI again (the page shown after a wrong code). */
  async function pendingTotp(user: UserRow, issuerName: string): Promise<{ secret: string; uri: string } | undefined> {
    const row = await store.find(totpFactorId(user.id));
    if (!row || row.confirmed_at) return undefined;
    const secret = box.open(row.secret);
    return { secret, uri: totpUri(secret, issuerName, user.email) };
  }

  /** New recovery codes replace the old ones: the plain codes, to be shown once (X-ID-MFA-3). */
  async function newRecoveryCodes(userId: string, tx: Tx): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const at = now().toISOString();
    await store.replaceRecoveryCodes(
      userId,
      codes.map((c) => ({ code_hash: recoveryCodeHash(c), user_id: userId, created_at: at, used_at: null })),
      tx,
    );
    return codes;
  }

  /**
   * Confirms the pending TOTP with a current code (X-ID-MFA-2): the factor is on from here, the
   * code's step is used up, and ten recovery codes are made (returned once).
   */
  async function confirmTotp(userId: string, code: string, via: FactorAuditContext = {}): Promise<string[]> {
    const row = await store.find(totpFactorId(userId));
    if (!row || row.confirmed_at)
      throw new DomainError("conflict", "no_enrolment", "There is no authenticator app waiting to be confirmed.");
    const step = await totpStep(box.open(row.secret), code.trim(), Math.floor(now().getTime() / 1000), undefined);
    if (step === undefined) throw invalidCode();
    // The factor, its recovery codes and `user.factor_enrolled` commit together (X-ID-AUD-6).
    return transaction(async (tx) => {
      if (!(await store.confirm(row.id, step, now().toISOString(), tx))) throw invalidCode();
      const codes = await newRecoveryCodes(userId, tx);
      await ctx.audit.record(tx, audited(userId, via, "user.factor_enrolled", { kind: row.kind }));
      return codes;
    });
  }

  /**
   * Checks a second-factor proof of `userId` from `address` under the limits of X-ID-MFA-8: a code
   * of one of the user's factors, or a recovery code (X-ID-MFA-3). The methods it adds, or
   * undefined when it was wrong.
   */
  async function check(userId: string, address: string, proof: FactorProof, via: FactorAuditContext = {}): Promise<CheckOutcome> {
    return throttledCheck(
      userId,
      address,
      async () => {
        const code = proof.code?.trim() ?? "";
        if (looksLikeRecoveryCode(code)) {
          // "otp": a recovery code is a one-time password too (RFC 8176 §2). Used and audited at once (X-ID-AUD-6).
          return transaction(async (tx) => {
            if (!(await store.useRecoveryCode(userId, recoveryCodeHash(code), now().toISOString(), tx))) return undefined;
            await ctx.audit.record(tx, audited(userId, via, "user.recovery_code_used"));
            return ["otp"];
          });
        }
        const factors = confirmedOf(await store.list(userId));
        for (const factor of factors) {
          const kind = kinds.find((k) => k.kind === factor.kind);
          if (kind && (await kind.check(factor, proof, now()))) return [...kind.amr];
        }
        return undefined;
      },
      "invalid_code",
      via,
    );
  }

  /**
   * X-ID-PK-9: a passkey as the second factor of `userId`, under the same limits as a code
   * (X-ID-MFA-8). `verify` checks the assertion (the passkeys area, bound to the step and to this
   * user) and answers the passkey's methods, or undefined when it refused it.
   */
  async function checkPasskey(
    userId: string,
    address: string,
    verify: () => Promise<string[] | undefined>,
    via: FactorAuditContext = {},
  ): Promise<CheckOutcome> {
    return throttledCheck(userId, address, verify, "invalid_passkey", via);
  }

  /** One second-factor attempt under the limits of X-ID-MFA-8, audited when refused or wrong (X-ID-AUD-6). */
  async function throttledCheck(
    userId: string,
    address: string,
    attempt: () => Promise<string[] | undefined>,
    wrong: "invalid_code" | "invalid_passkey",
    via: FactorAuditContext,
  ): Promise<CheckOutcome> {
    const outcome = await throttle.attempt(throttleAccount(userId), address, attempt, (amr) => amr !== undefined);
    // A refused proof changes nothing else: recorded on its own, with the reason and never the proof.
    if (outcome.refused || !outcome.result) {
      const reason = outcome.refused ? "throttled" : wrong;
      await ctx.audit.record(undefined, audited(userId, via, "user.second_factor_failed", { reason }));
    }
    return outcome.refused ? { refused: outcome.refused } : { amr: outcome.result };
  }

  /**
   * What the security page's removal and regeneration ask for (X-ID-MFA-2, X-ID-MFA-3): the
   * current password or a current code, under the same limits. Throws when wrong or refused.
   */
  async function proveOwner(
    user: UserRow,
    address: string,
    proof: { password?: string; code?: string },
    via: FactorAuditContext,
  ): Promise<void> {
    if (proof.password) {
      const outcome = await throttle.attempt(
        throttleAccount(user.id),
        address,
        () => accounts.verifyPassword(user, proof.password!),
        (ok) => ok,
      );
      if (outcome.refused) throw refusedError(outcome.refused);
      if (!outcome.result) throw new DomainError("invalid", "password_invalid", "The password is wrong.");
      return;
    }
    const outcome = await check(user.id, address, { code: proof.code ?? "" }, via);
    if (outcome.refused) throw refusedError(outcome.refused);
    if (!outcome.amr) throw invalidCode();
  }

  async function removeTotp(
    user: UserRow,
    address: string,
    proof: { password?: string; code?: string },
    via: FactorAuditContext = {},
  ): Promise<void> {
    const row = await store.find(totpFactorId(user.id));
    if (!row) throw new DomainError("conflict", "no_factor", "No authenticator app is set up.");
    if (row.confirmed_at) await proveOwner(user, address, proof, via);
    await transaction(async (tx) => {
      // Only a confirmed factor was ever on: dropping an enrolment never finished is no event.
      if ((await store.remove(row.id, user.id, tx)) && row.confirmed_at)
        await ctx.audit.record(tx, audited(user.id, via, "user.factor_removed", { kind: row.kind }));
    });
  }

  async function regenerateRecoveryCodes(
    user: UserRow,
    address: string,
    proof: { password?: string; code?: string },
    via: FactorAuditContext = {},
  ): Promise<string[]> {
    if (!(await hasFactor(user.id))) throw new DomainError("conflict", "no_factor", "Set up an authenticator app first.");
    await proveOwner(user, address, proof, via);
    return transaction(async (tx) => {
      const codes = await newRecoveryCodes(user.id, tx);
      await ctx.audit.record(tx, audited(user.id, via, "user.recovery_codes_regenerated"));
      return codes;
    });
  }

  /** The policy of an application: its own, else its organization's, else optional (X-ID-MFA-7). */
  async function policyOf(applicationId: string): Promise<FactorPolicy> {
    const { application, organization } = await store.policies(applicationId);
    const chosen = application ?? organization;
    return chosen === "required" ? "required" : "optional";
  }

  /**
   * After the first factor of a sign-in to `applicationId` (X-ID-MFA-4, X-ID-MFA-7): `verify`
   * when the user has a factor, `enrol` when the application requires one and the user has none,
   * undefined when the sign-in is complete. A passkey is a second factor only where one is
   * required (X-ID-PK-9): under `optional` it does not turn the step on by itself.
   */
  async function secondStepFor(userId: string, applicationId: string): Promise<"verify" | "enrol" | undefined> {
    if (await hasFactor(userId)) return "verify";
    if ((await policyOf(applicationId)) !== "required") return undefined;
    return (await hasPasskey(userId)) ? "verify" : "enrol";
  }

  /** Starts the second step: the cookie value that carries it, bound to the request and its first factor. */
  async function beginChallenge(userId: string, requestId: string, amr: readonly (FirstFactorMethod | string)[]): Promise<string> {
    const value = randomSecret(32);
    const at = now();
    if (Math.random() < 0.02) await store.removeExpiredChallenges(at.toISOString());
    await store.insertChallenge({
      id_hash: sha256Hex(value),
      user_id: userId,
      request_id: requestId,
      amr: amr.filter((m) => m !== "otp" && m !== "mfa").join(" ") || "pwd",
      created_at: at.toISOString(),
      expires_at: new Date(at.getTime() + CHALLENGE_TTL_SECONDS * 1000).toISOString(),
    });
    return value;
  }

  /** The live challenge of a cookie value for `requestId`, or undefined. */
  async function findChallenge(cookieValue: string | undefined, requestId: string): Promise<FactorChallenge | undefined> {
    if (!cookieValue || cookieValue.length > 100) return undefined;
    const row = await store.findChallenge(sha256Hex(cookieValue), now().toISOString());
    if (!row || row.request_id !== requestId) return undefined;
    return { userId: row.user_id, requestId: row.request_id, amr: row.amr.split(" "), idHash: row.id_hash };
  }

  /**
   * X-ID-PK-9: what a passkey challenge of this step is bound to (the passkey challenges' `binding`,
   * 64 characters at most): no other step, and no login page's request, can answer with it.
   */
  const passkeyBindingOf = (challenge: FactorChallenge) => `2fa:${challenge.idHash.slice(0, 60)}`;

  /** Ends the challenge once its second factor passed: false when another request ended it first (it completes once). */
  const finishChallenge = (challenge: FactorChallenge) => store.takeChallenge(challenge.idHash);

  return {
    hasFactor,
    hasPasskey,
    stepMethods,
    status,
    startTotp,
    pendingTotp,
    confirmTotp,
    check,
    checkPasskey,
    removeTotp,
    regenerateRecoveryCodes,
    policyOf,
    setApplicationPolicy: (applicationId: string, policy: FactorPolicy | null) => store.setApplicationPolicy(applicationId, policy),
    setOrganizationPolicy: (organizationId: string, policy: FactorPolicy | null) => store.setOrganizationPolicy(organizationId, policy),
    secondStepFor,
    beginChallenge,
    findChallenge,
    finishChallenge,
    passkeyBindingOf,
    /** The methods of a session after the second factor: the first ones, the factor's and `mfa` (RFC 8176). */
    withSecondFactor,
  };
}

function refusedError(refusal: SignInRefusal): DomainError {
  return new DomainError("rate_limited", "too_many_attempts", "Too many wrong codes or passwords: try again later.", {
    retryAfterSeconds: refusal.retryAfterSeconds,
  });
}

export type FactorsArea = ReturnType<typeof createFactorsArea>;
