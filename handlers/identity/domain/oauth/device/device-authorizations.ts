/**
 * The device authorization grant's two sides apart from the token endpoint (RFC 8628): the
 * device asks for codes (X-ID-DEV-1), and the signed-in user looks a user code up, under the
 * guess limits (X-ID-DEV-4), and approves or denies it (X-ID-DEV-3), in the audit log (X-ID-DEV-10). Polling is the grant module
 * `grants/device-code.ts`.
 */
import type { Clock } from "../../../../../server/clock.ts";
import type { Transactor } from "../../../../../server/storage/transaction.ts";
import type { Audit } from "../../audit.ts";
import { OAuthError, invalidScope } from "../errors.ts";
import { DomainError } from "../../../../../server/domain/errors.ts";
import { addressBucket } from "../../../../../server/security/sign-in-throttle.ts";
import { randomSecret, sha256Hex } from "../../../../../server/security/tokens.ts";
import { uuidv7 } from "../../../../../server/ids.ts";
import type { Application, ApplicationStore } from "../../../storage/applications.ts";
import type { DeviceAuthorizationStore } from "../../../storage/device-authorizations.ts";
import type { DeviceAuthorizationRow } from "../../../storage/schema.ts";
import { parseScopes } from "../scopes.ts";
import { resourceRefusal, scopeRefusal } from "../resource-indicators.ts";
import type { Session } from "../sessions.ts";
import { formatUserCode, newUserCode, normaliseUserCode, userCodeKey } from "./user-code.ts";

/** RFC 8628 §3.2 values of this server (X-ID-DEV-1). */
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/** RFC 8628 §3.5: each `slow_down` adds this to the interval, for good. */
export const SLOW_DOWN_SECONDS = 5;
export const DEVICE_CODE_PREFIX = "dc_";
export const DEVICE_PATH = "/device";

/** X-ID-DEV-4: wrong user codes allowed within the window, per signed-in user and per client address. */
export const GUESS_WINDOW_SECONDS = 15 * 60;
export const GUESSES_PER_USER = 5;
export const GUESSES_PER_ADDRESS = 20;

/** The key a device code is stored and looked up by. */
export const deviceCodeKey = (deviceCode: string): string => sha256Hex(`device_code:${deviceCode}`);

/** A pending authorization the user is asked about: what the consent screen names. */
export interface PendingDeviceAuthorization {
  row: DeviceAuthorizationRow;
  application: Application;
  scopes: string[];
  /** The code as the user should see it, `XXXX-XXXX`. */
  userCode: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function createDeviceAuthorizations(deps: {
  store: DeviceAuthorizationStore;
  applications: ApplicationStore;
  clock: Clock;
  issuer: string;
  transaction: Transactor;
  audit: Audit;
}) {
  const { store, applications, clock, issuer, transaction, audit } = deps;

  /**
   * X-ID-DEV-1: the codes for an authenticated client. X-ID-DEV-11: `resource` (RFC 8707), checked
   * before the scopes that depend on it, as on the authorization request (X-ID-RES-1, X-ID-RES-2).
   */
  async function start(app: Application, scope: string | undefined, resource?: string) {
    if (!app.deviceAuthorization)
      throw new OAuthError("unauthorized_client", "This application may not use the device authorization grant.");
    const targetRefusal = resource === undefined ? undefined : resourceRefusal(app, resource);
    if (targetRefusal) throw new OAuthError("invalid_target", targetRefusal);
    const scopes = parseScopes(scope ?? "openid");
    if (scopes.length === 0) throw invalidScope("scope must name at least one scope.");
    const scopeRefused = scopeRefusal(app, scopes, resource);
    if (scopeRefused) throw invalidScope(scopeRefused);
    const now = clock.now().getTime();
    const deviceCode = DEVICE_CODE_PREFIX + randomSecret(32);
    const userCode = newUserCode();
    await store.insert({
      id: uuidv7(now),
      device_code_hash: deviceCodeKey(deviceCode),
      user_code_hash: userCodeKey(normaliseUserCode(userCode)!),
      application_id: app.id,
      scopes: JSON.stringify(scopes),
      created_at: iso(now),
      expires_at: iso(now + DEVICE_CODE_TTL_SECONDS * 1000),
      interval_seconds: DEVICE_POLL_INTERVAL_SECONDS,
      last_polled_at: null,
      status: "pending",
      user_id: null,
      auth_time: null,
      amr: null,
      decided_at: null,
      resource: resource ?? null,
    });
    const verificationUri = `${issuer}${DEVICE_PATH}`;
    return {
      device_code: deviceCode,
      user_code: userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(userCode)}`,
      expires_in: DEVICE_CODE_TTL_SECONDS,
      interval: DEVICE_POLL_INTERVAL_SECONDS,
    };
  }

  /** X-ID-DEV-4: refuses before any lookup once the user or the address guessed wrong too often. */
  async function checkGuessLimits(userId: string, ip: string): Promise<string[]> {
    const since = iso(clock.now().getTime() - GUESS_WINDOW_SECONDS * 1000);
    const subjects = [`user:${userId}`, `address:${addressBucket(ip)}`];
    const [byUser, byAddress] = await Promise.all(subjects.map((s) => store.countGuesses(s, since)));
    if (byUser! >= GUESSES_PER_USER || byAddress! >= GUESSES_PER_ADDRESS) {
      throw new DomainError("rate_limited", "too_many_device_codes", "Too many wrong codes: wait a few minutes, then try again.", {
        retryAfterSeconds: GUESS_WINDOW_SECONDS,
      });
    }
    return subjects;
  }

  /**
   * X-ID-DEV-3: the pending authorization of the typed code, for the signed-in user's decision.
   * A code that is malformed, unknown, expired or decided counts as a wrong guess and is 400.
   */
  async function lookUp(typed: string, session: Session, ip: string): Promise<PendingDeviceAuthorization> {
    const subjects = await checkGuessLimits(session.userId, ip);
    const code = normaliseUserCode(typed);
    const row = code ? await store.findByUserCodeHash(userCodeKey(code)) : undefined;
    const application = row ? await applications.findById(row.application_id) : undefined;
    const nowIso = clock.now().toISOString();
    if (!code || !row || !application?.enabled || row.status !== "pending" || row.expires_at <= nowIso) {
      await store.recordGuess(subjects, nowIso);
      throw new DomainError("invalid", "invalid_user_code", "That code is not valid or has expired. Check the code on your device.");
    }
    return { row, application, scopes: JSON.parse(row.scopes), userCode: formatUserCode(code) };
  }

  /** X-ID-DEV-3: approves or denies the code once; a second decision (or a race lost) is 400. */
  async function decide(typed: string, session: Session, ip: string, approve: boolean): Promise<PendingDeviceAuthorization> {
    const pending = await lookUp(typed, session, ip);
    // The decision and its audit event (X-ID-DEV-10) commit together, or neither does.
    const won = await transaction(async (tx) => {
      const decided = await store.decide(
        pending.row.id,
        {
          status: approve ? "approved" : "denied",
          userId: session.userId,
          authTime: iso(session.authTime * 1000),
          amr: session.amr.join(" "),
          at: clock.now().toISOString(),
        },
        tx,
      );
      if (decided)
        await audit.record(tx, {
          type: approve ? "user.device_approved" : "user.device_denied",
          actor: { type: "user", id: session.userId },
          userId: session.userId,
          applicationId: pending.application.id,
          origin: { address: ip },
          details: approve ? { scopes: pending.scopes } : {},
        });
      return decided;
    });
    if (!won) throw new DomainError("invalid", "invalid_user_code", "That code was already used or has expired.");
    return pending;
  }

  return { start, lookUp, decide };
}

export type DeviceAuthorizations = ReturnType<typeof createDeviceAuthorizations>;
