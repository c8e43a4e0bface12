/**
 * The device authorization grant as a client runs it (RFC 8628 §3.1-§3.5; X-CLI-8): ask for the
 * codes, tell the user where to enter the user code, then poll the token endpoint until the user
 * decides. The rules of the poll loop, each from RFC 8628 §3.5:
 * - wait `interval` seconds (5 when the issuer names none) before every poll, the first included;
 * - `authorization_pending`: poll again; `slow_down`: the interval grows by 5 seconds for this and
 *   every later poll;
 * - `access_denied`, `expired_token` or any other error: stop, and say why;
 * - stop, too, when `expires_in` has passed without a decision.
 * Waiting goes through the injected `sleep` and time through `now`, so tests never wait real
 * seconds; an abort (Ctrl-C) ends the wait and the loop at once.
 */
import { CliError, Interrupted } from "./errors.ts";
import { type IssuedTokens, type Issuer, pollDeviceCode, requestDeviceCodes } from "./identity-client.ts";

/** RFC 8628 §3.2: the interval when the issuer names none, and the step `slow_down` adds (§3.5). */
export const DEFAULT_INTERVAL_SECONDS = 5;
export const SLOW_DOWN_STEP_SECONDS = 5;

export interface DeviceFlowOptions {
  issuer: Issuer;
  scope: string;
  /** RFC 8707 resource indicator: the API the access token is for (sent with the device authorization request). */
  resource?: string;
  /** Shows the user code and the address to the user. */
  show(codes: { userCode: string; verificationUri: string; verificationUriComplete?: string }): void;
  /** Waits `ms` milliseconds, or rejects when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  now(): number;
  signal?: AbortSignal;
}

export async function runDeviceFlow(o: DeviceFlowOptions): Promise<IssuedTokens> {
  const codes = await interruptible(o.signal, () =>
    requestDeviceCodes(o.issuer, { scope: o.scope, ...(o.resource ? { resource: o.resource } : {}) }, o.signal),
  );
  o.show({
    userCode: codes.user_code,
    verificationUri: codes.verification_uri,
    ...(codes.verification_uri_complete ? { verificationUriComplete: codes.verification_uri_complete } : {}),
  });
  const deadline = o.now() + codes.expires_in * 1000;
  let interval = codes.interval ?? DEFAULT_INTERVAL_SECONDS;
  for (;;) {
    await interruptible(o.signal, () => o.sleep(interval * 1000, o.signal));
    if (o.now() >= deadline) throw expired();
    const answer = await interruptible(o.signal, () => pollDeviceCode(o.issuer, codes.device_code, o.signal));
    if ("tokens" in answer) return answer.tokens;
    switch (answer.error) {
      case "authorization_pending":
        continue;
      case "slow_down":
        interval += SLOW_DOWN_STEP_SECONDS;
        continue;
      case "access_denied":
        throw new CliError("The sign-in was denied in the browser. Nothing was stored.");
      case "expired_token":
        throw expired();
      default:
        throw new CliError(
          `The identity service ended the sign-in: ${answer.error}${answer.description ? ` (${answer.description})` : ""}. Nothing was stored.`,
        );
    }
  }
}

const expired = () => new CliError("The code expired before the sign-in was approved. Run `rb login --device` again.");

/** Runs `step`; an abort (Ctrl-C) during it, or before it, is `Interrupted` (exit 130, no message: X-CLI-2). */
async function interruptible<T>(signal: AbortSignal | undefined, step: () => Promise<T>): Promise<T> {
  if (signal?.aborted) throw new Interrupted();
  try {
    return await step();
  } catch (err) {
    if (signal?.aborted) throw new Interrupted();
    throw err;
  }
}

/** The real wait: a timer that an abort clears. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Interrupted());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
