/**
 * Passkeys (WebAuthn, X-ID-PK-1..8): registration by a signed-in user, passwordless sign-in with a
 * discoverable credential, and the user's list of passkeys. Every ceremony starts with a challenge
 * stored server-side (single-use, expiring, bound to the session or the authorization request:
 * X-ID-PK-2) and ends by consuming it with a conditional write before anything is verified.
 * A passkey added, renamed or removed is recorded in the audit log in the transaction of the
 * change (X-ID-AUD-8): added and removed as factor events of kind `passkey`.
 */
import { randomUUID } from "node:crypto";
import {
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import { DomainError } from "../../../../server/domain/errors.ts";
import type { Clock } from "../../../../server/clock.ts";
import type { Logger } from "pino";
import type { Transactor } from "../../../../server/storage/transaction.ts";
import type { Audit, AuditEntry, RequestOrigin } from "../audit.ts";
import type { PasskeyStore } from "../../storage/passkeys.ts";
import type { PasskeyRow, UserRow } from "../../storage/schema.ts";
import { passkeyAmr, type RelyingParty } from "./relying-party.ts";

/** How long a ceremony may take, from its options to its answer (WebAuthn's recommended timeout is 5 minutes). */
export const CHALLENGE_TTL_SECONDS = 300;
const NAME_MAX = 64;
/** How recent a sign-in must be to stand in for the password of an account without one (X-ID-PK-6). */
export const RECENT_SIGN_IN_SECONDS = 300;
const DEFAULT_NAME = "Passkey";

/** A passkey as the account page lists it. */
export interface PasskeySummary {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** A verified passkey assertion: whose it was and how to describe the sign-in (X-ID-PK-3). */
export interface PasskeyAssertion {
  userId: string;
  passkeyId: string;
  amr: string[];
}

const refused = (detail: string) => new DomainError("refused", "passkey_refused", detail);
const fromBase64url = (s: string) => new Uint8Array(Buffer.from(s, "base64url"));

/** The challenge a response answers (its clientDataJSON's), or undefined when the response is not one. */
function challengeOf(response: { response?: { clientDataJSON?: unknown } }): string | undefined {
  try {
    const data = JSON.parse(Buffer.from(String(response.response?.clientDataJSON), "base64url").toString("utf8"));
    return typeof data.challenge === "string" && data.challenge.length <= 64 ? data.challenge : undefined;
  } catch {
    return undefined;
  }
}

/** The posted credential (the browser's JSON), or a refusal: never an exception of the parser. */
function parseCredential<T extends { id: string; response: object }>(text: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw refused("The passkey's answer is not valid.");
  }
  const v = value as { id?: unknown; response?: unknown; type?: unknown };
  if (!v || typeof v.id !== "string" || typeof v.response !== "object" || v.response === null || v.type !== "public-key")
    throw refused("The passkey's answer is not valid.");
  return value as T;
}

export function validPasskeyName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > NAME_MAX || /[\u0000-\u001f\u007f]/.test(trimmed))
    throw new DomainError("invalid", "invalid_name", `A passkey's name is 1 to ${NAME_MAX} characters.`);
  return trimmed;
}

export interface PasskeysDeps {
  store: PasskeyStore;
  clock: Clock;
  logger: Logger;
  relyingParty: RelyingParty;
  transaction: Transactor;
  audit: Audit;
}

export function createPasskeysArea({ store, clock, logger, relyingParty, transaction, audit }: PasskeysDeps) {
  const now = () => clock.now().toISOString();
  /** The user's own change to a passkey, as the audit log records it (X-ID-AUD-8). */
  const byUser = (userId: string, type: AuditEntry["type"], details: AuditEntry["details"], origin?: RequestOrigin): AuditEntry => ({
    type,
    actor: { type: "user", id: userId },
    userId,
    origin,
    details,
  });

  async function saveChallenge(challenge: string, purpose: "registration" | "authentication", binding: string, userId?: string) {
    await store.insertChallenge({
      challenge,
      purpose,
      binding,
      user_id: userId ?? null,
      expires_at: new Date(clock.now().getTime() + CHALLENGE_TTL_SECONDS * 1000).toISOString(),
      consumed_at: null,
    });
  }

  /** X-ID-PK-2: the response's challenge, consumed once, or a refusal (unknown, used, expired, or bound elsewhere). */
  async function consume(response: object, purpose: "registration" | "authentication", binding: string) {
    const challenge = challengeOf(response as { response?: { clientDataJSON?: unknown } });
    const row = challenge ? await store.consumeChallenge(challenge, purpose, binding, now()) : undefined;
    if (!row) throw refused("This passkey request has expired or was already used. Try again.");
    return row;
  }

  return {
    relyingParty,

    /** X-ID-PK-1: options to create a discoverable passkey for `user`, bound to the session `sessionIdHash`. */
    async registrationOptions(user: UserRow, sessionIdHash: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
      const existing = await store.listByUser(user.id);
      const options = await generateRegistrationOptions({
        rpName: relyingParty.name,
        rpID: relyingParty.id,
        userName: user.email,
        userDisplayName: `${user.first_name} ${user.last_name}`.trim() || user.email,
        userID: new TextEncoder().encode(user.id),
        attestationType: "none",
        excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: JSON.parse(p.transports) })),
        authenticatorSelection: { residentKey: "required", userVerification: "required" },
        timeout: CHALLENGE_TTL_SECONDS * 1000,
      });
      await saveChallenge(options.challenge, "registration", sessionIdHash, user.id);
      return options;
    },

    /** X-ID-PK-1: verifies the browser's answer to the session's registration challenge and stores the passkey. */
    async register(
      userId: string,
      sessionIdHash: string,
      name: string,
      credential: string,
      origin?: RequestOrigin,
    ): Promise<PasskeySummary> {
      const passkeyName = validPasskeyName(name || DEFAULT_NAME);
      const response = parseCredential<RegistrationResponseJSON>(credential);
      const challenge = await consume(response, "registration", sessionIdHash);
      if (challenge.user_id !== userId) throw refused("This passkey request belongs to another sign-in. Try again.");
      let info: Awaited<ReturnType<typeof verifyRegistrationResponse>>["registrationInfo"];
      try {
        const verification = await verifyRegistrationResponse({
          response,
          expectedChallenge: challenge.challenge,
          expectedOrigin: relyingParty.origin,
          expectedRPID: relyingParty.id,
          requireUserVerification: true,
        });
        info = verification.verified ? verification.registrationInfo : undefined;
      } catch (err) {
        logger.info({ err }, "passkey registration refused");
      }
      if (!info) throw refused("The passkey could not be verified. Try again.");
      const row: PasskeyRow = {
        id: randomUUID(),
        credential_id: info.credential.id,
        user_id: userId,
        name: passkeyName,
        public_key: Buffer.from(info.credential.publicKey).toString("base64url"),
        counter: info.credential.counter,
        transports: JSON.stringify(response.response.transports ?? info.credential.transports ?? []),
        device_type: info.credentialDeviceType,
        backed_up: info.credentialBackedUp,
        created_at: now(),
        last_used_at: null,
      };
      await transaction(async (tx) => {
        if (!(await store.insert(row, tx))) throw new DomainError("conflict", "passkey_exists", "This passkey is already registered.");
        await audit.record(tx, byUser(userId, "user.factor_enrolled", { kind: "passkey", passkeyId: row.id }, origin));
      });
      return { id: row.id, name: row.name, createdAt: row.created_at, lastUsedAt: null };
    },

    /**
     * X-ID-PK-3: options for a sign-in with a discoverable passkey (no account named), bound to
     * `binding` (the authorization request). With `userId` (a second factor after a password), only
     * that user's passkeys are offered.
     */
    async authenticationOptions(binding: string, userId?: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
      const allow = userId ? await store.listByUser(userId) : [];
      const options = await generateAuthenticationOptions({
        rpID: relyingParty.id,
        userVerification: "required",
        timeout: CHALLENGE_TTL_SECONDS * 1000,
        ...(userId ? { allowCredentials: allow.map((p) => ({ id: p.credential_id, transports: JSON.parse(p.transports) })) } : {}),
      });
      await saveChallenge(options.challenge, "authentication", binding, userId);
      return options;
    },

    /** The user a posted assertion names (by its credential id), for the sign-in throttle's account key; undefined when unknown. */
    async credentialOwner(credential: string): Promise<string | undefined> {
      try {
        const id = (JSON.parse(credential) as { id?: unknown }).id;
        return typeof id === "string" ? (await store.findByCredentialId(id))?.user_id : undefined;
      } catch {
        return undefined;
      }
    },

    /**
     * X-ID-PK-3, X-ID-PK-4: verifies an assertion answering `binding`'s challenge. With `userId`
     * (a second factor), the passkey must be that user's. The signature counter must grow when the
     * authenticator keeps one; a counter that does not is refused (a cloned authenticator, WebAuthn
     * §6.1.1), and the stored counter only moves from the value this check read.
     */
    async authenticate(binding: string, credential: string, userId?: string): Promise<PasskeyAssertion> {
      const response = parseCredential<AuthenticationResponseJSON>(credential);
      const challenge = await consume(response, "authentication", binding);
      const passkey = await store.findByCredentialId(response.id);
      const expectedUser = userId ?? challenge.user_id ?? undefined;
      if (!passkey || (expectedUser && passkey.user_id !== expectedUser)) throw refused("This passkey is not registered here.");
      const counter = Number(passkey.counter);
      let newCounter: number | undefined;
      try {
        const verification = await verifyAuthenticationResponse({
          response,
          expectedChallenge: challenge.challenge,
          expectedOrigin: relyingParty.origin,
          expectedRPID: relyingParty.id,
          credential: {
            id: passkey.credential_id,
            publicKey: fromBase64url(passkey.public_key),
            counter,
            transports: JSON.parse(passkey.transports) as AuthenticatorTransport[],
          },
          requireUserVerification: true,
        });
        if (verification.verified) newCounter = verification.authenticationInfo.newCounter;
      } catch (err) {
        logger.info({ err, passkeyId: passkey.id }, "passkey sign-in refused");
      }
      if (newCounter === undefined) throw refused("The passkey could not be verified.");
      if (!(await store.recordUse(passkey.id, counter, newCounter, now())))
        throw refused("The passkey was used at the same time elsewhere. Try again.");
      return { userId: passkey.user_id, passkeyId: passkey.id, amr: passkeyAmr(passkey.device_type) };
    },

    /** X-ID-PK-6: whether a session signed in at `authTime` (seconds) is recent enough to remove a passkey without a password. */
    recentlySignedIn(authTime: number): boolean {
      return clock.now().getTime() / 1000 - authTime <= RECENT_SIGN_IN_SECONDS;
    },

    /** X-ID-PK-6: the user's passkeys, oldest first. */
    async list(userId: string): Promise<PasskeySummary[]> {
      return (await store.listByUser(userId)).map((p) => ({ id: p.id, name: p.name, createdAt: p.created_at, lastUsedAt: p.last_used_at }));
    },

    /** X-ID-PK-6: renames one of the user's passkeys; another user's (or no) passkey is not_found. */
    async rename(userId: string, id: string, name: string, origin?: RequestOrigin): Promise<void> {
      const newName = validPasskeyName(name);
      await transaction(async (tx) => {
        if (!(await store.rename(userId, id, newName, tx))) throw new DomainError("not_found", "passkey_not_found", "No such passkey.");
        await audit.record(tx, byUser(userId, "user.passkey_renamed", { passkeyId: id }, origin));
      });
    },

    /** X-ID-PK-6: removes one of the user's passkeys (the caller has checked the password or a fresh sign-in). */
    async remove(userId: string, id: string, origin?: RequestOrigin): Promise<void> {
      await transaction(async (tx) => {
        if (!(await store.remove(userId, id, tx))) throw new DomainError("not_found", "passkey_not_found", "No such passkey.");
        await audit.record(tx, byUser(userId, "user.factor_removed", { kind: "passkey", passkeyId: id }, origin));
      });
    },
  };
}

export type PasskeysArea = ReturnType<typeof createPasskeysArea>;
