/**
 * TOTP (RFC 6238) as authenticator apps expect it: SHA-1, 6 digits, 30-second steps, a 160-bit
 * Base32 secret (RFC 4226 §4 asks for at least 128). A code is accepted in its own step and one
 * step either side (clock drift between phone and server), and only after the last step the
 * factor accepted (`afterStep`): a code, once used, is refused for the rest of its window.
 */
import { generateSecret, generateURI, verify } from "otplib";

export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;

export const newTotpSecret = (): string => generateSecret({ length: 20 });

/** The `otpauth://totp/…` URI of the QR code: the label is `issuer:account`, as Google Authenticator's key-uri format asks. */
export const totpUri = (secret: string, issuer: string, account: string): string =>
  generateURI({ issuer, label: account, secret, algorithm: "sha1", digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS });

/** The time step `code` belongs to when it is valid at `epochSeconds` and after `afterStep`; undefined otherwise. */
export async function totpStep(
  secret: string,
  code: string,
  epochSeconds: number,
  afterStep: number | undefined,
): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const result = await verify({
    secret,
    token: code,
    epoch: epochSeconds,
    period: TOTP_PERIOD_SECONDS,
    digits: TOTP_DIGITS,
    algorithm: "sha1",
    epochTolerance: TOTP_PERIOD_SECONDS,
    ...(afterStep !== undefined ? { afterTimeStep: afterStep } : {}),
  });
  return result.valid && "timeStep" in result ? result.timeStep : undefined;
}
