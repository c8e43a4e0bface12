/**
 * What every service accepts as an email address (X-API-18): the contract's `email` format, which
 * the HTTP edge checks with this function (server/http/app.ts), and identity's check of the
 * address an upstream sign-in provider asserts (X-ID-SOC-2), so both paths hold one rule.
 *
 * - ajv-formats' `email` format in its "full" mode, unchanged: an ASCII dot-atom local part, `@`,
 *   and a domain of dot-separated letter-digit-hyphen labels with at least one dot. Quoted local
 *   parts, address literals (`a@[192.0.2.1]`), SMTPUTF8 and U-label domains do not match.
 * - and a domain that does not end in a number. `a@127.0.0.1`, `a@10.1` or `a@127.0.0.0x1` match
 *   the format's labels, but their domain is an IPv4 address, not a domain name: RFC 1123 §2.1
 *   and RFC 3696 §2 never let a top-level domain be all-numeric, and the WHATWG URL Standard's
 *   host parser reads a host whose last label is a decimal or `0x` hexadecimal number as IPv4.
 *   RFC 5321 §4.1.3 writes an address literal in brackets, which the format refuses too: mail to
 *   an IP address skips the MX lookup and aims the relay at an address of the sender's choosing.
 * - at most 254 characters (RFC 5321 §4.5.3.1.3's path less its angle brackets), as every
 *   `email` field of the contract also says with `maxLength`.
 */
import { fullFormats } from "ajv-formats/dist/formats.js";

export const MAX_EMAIL_ADDRESS_LENGTH = 254;

const EMAIL_FORMAT = fullFormats.email as RegExp;

/** A label the WHATWG URL host parser reads as a number: decimal digits, or `0x` and hexadecimal digits. */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/i;

/** Whether `domain`'s last label is a number, so that a resolver or URL parser takes it for an IPv4 address. */
export const endsInNumber = (domain: string): boolean => NUMERIC_LABEL.test(domain.slice(domain.lastIndexOf(".") + 1));

/** The contract's `email` format (X-API-18), as ajv checks it; the schema's `maxLength` bounds the length separately. */
export const matchesEmailFormat = (value: string): boolean =>
  EMAIL_FORMAT.test(value) && !endsInNumber(value.slice(value.lastIndexOf("@") + 1));

/** An address a contract's `email` field would accept: the format and the length, for values that do not come through the schema. */
export const isEmailAddress = (value: string): boolean => value.length <= MAX_EMAIL_ADDRESS_LENGTH && matchesEmailFormat(value);
