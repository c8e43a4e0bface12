/**
 * Click tracking's links (X-EM-28). A message's tracked destinations are stored once, numbered in
 * document order (at most MAX_TRACKED_LINKS of them); a copy's click URL for destination n carries a
 * token that names the copy and n and is signed (HMAC-SHA256 under the service's `click_token_key`,
 * a server secret). Nothing is stored per copy and link: the work and the rows of a send follow its
 * links plus its recipients, never their product, and a click finds its copy by the key, its
 * destination by the message and n.
 *
 * A token is 35 bytes in base64url (47 characters): a version byte, the copy's UUID (16 bytes), n
 * (2 bytes, big-endian) and the first 16 bytes of the HMAC of those 19, compared in constant time.
 * Tokens of the earlier format (random, stored per copy and link in `email_links`) are not of this
 * shape and are still looked up there until retention has purged their messages.
 */
import { createHmac, createSecretKey, timingSafeEqual } from "node:crypto";

/** Distinct destinations tracked per message; links to later ones stay as written (SendGrid tracks up to 1000 per email). */
export const MAX_TRACKED_LINKS = 1000;

const VERSION = 1;
const BODY_BYTES = 1 + 16 + 2;
const MAC_BYTES = 16;
const TOKEN_BYTES = BODY_BYTES + MAC_BYTES;
const TOKEN_CHARS = Math.ceil((TOKEN_BYTES * 4) / 3);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a signed click token names: one copy, and one of its message's tracked destinations. */
export interface ClickTarget {
  copyId: string;
  /** The destination's number in its message, from 0, in document order. */
  position: number;
}

export interface ClickTokens {
  /** The token of destination `position` in copy `copyId` (a UUID). */
  sign(copyId: string, position: number): string;
  /** `sign` for one copy's many destinations: the copy's part of each token is made once. */
  signer(copyId: string): (position: number) => string;
  /** What `token` names, or undefined when it is not a token this service signed. */
  verify(token: string): ClickTarget | undefined;
}

/** Click tokens under `key` (the `click_token_key` server secret, shared by every instance). */
export function createClickTokens(key: Buffer): ClickTokens {
  // A KeyObject, made once: an HMAC keyed with a Buffer imports the key again each time, several times
  // the cost of the HMAC itself, and a copy signs one token per tracked destination.
  const secret = createSecretKey(key);
  const mac = (body: Buffer) => createHmac("sha256", secret).update(body).digest().subarray(0, MAC_BYTES);
  function signer(copyId: string): (position: number) => string {
    if (!UUID.test(copyId)) throw new TypeError("a copy id is a UUID");
    const token = Buffer.alloc(TOKEN_BYTES);
    token[0] = VERSION;
    token.write(copyId.replaceAll("-", ""), 1, 16, "hex");
    return (position) => {
      if (!Number.isInteger(position) || position < 0 || position >= MAX_TRACKED_LINKS) throw new RangeError("no such tracked link");
      token.writeUInt16BE(position, 17);
      mac(token.subarray(0, BODY_BYTES)).copy(token, BODY_BYTES);
      return token.toString("base64url");
    };
  }
  return {
    sign: (copyId, position) => signer(copyId)(position),
    signer,
    verify(token) {
      if (token.length !== TOKEN_CHARS) return undefined;
      const bytes = Buffer.from(token, "base64url");
      // Canonical only: base64url's last character carries spare bits, and four spellings of one token would all pass.
      if (bytes.length !== TOKEN_BYTES || bytes[0] !== VERSION || bytes.toString("base64url") !== token) return undefined;
      if (!timingSafeEqual(mac(bytes.subarray(0, BODY_BYTES)), bytes.subarray(BODY_BYTES))) return undefined;
      const hex = bytes.toString("hex", 1, 17);
      return {
        copyId: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
        position: bytes.readUInt16BE(17),
      };
    },
  };
}
