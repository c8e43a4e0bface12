/**
 * A large text or HTML part of a copy encoded a piece at a time, as a finished MIME node (headers and
 * body) that nodemailer sends as it is (`{ raw }`). Left to nodemailer, a part is scanned to choose its
 * encoding and then encoded whole, in one go on the event loop: work that grows with the part (up to a
 * 256 KiB body with thousands of tracked links), once per copy, and the relay pool starts several
 * copies in the same turn. The rule kept here: no encoding holds the loop for a whole part. The same
 * work is cut into jobs that the caller runs between other work (the renderer's time slices), and
 * nodemailer only streams the result.
 *
 * The encoding is the one nodemailer would choose (`MimeNode._getTextEncoding`): quoted-printable when
 * the text has more Latin letters than bytes outside printable ASCII, else base64. Quoted-printable is
 * nodemailer's own `encode` and `wrap` (RFC 2045 §6.7) applied to pieces of the text, joined by soft
 * line breaks; base64 is lines of 76 characters (§6.8). Both decode to the text exactly. Parts shorter
 * than LARGE_PART_CHARS are left to nodemailer (7bit when it can, as before).
 */
import { encode as qpEncode, wrap as qpWrap } from "nodemailer/lib/qp";

/** A part at least this long is encoded here, in pieces; a shorter one by nodemailer at once, as cheaply. */
export const LARGE_PART_CHARS = 64 * 1024;
/** Characters of text per job. */
const PIECE_CHARS = 16 * 1024;
/** Bytes per base64 job: whole 57-byte lines (76 characters). */
const BASE64_PIECE_BYTES = 57 * 256;
const LINE = 76;

/** Runs a synchronous job when the event loop can afford it (the renderer's time slices). */
export type RunJob = <T>(job: () => T) => Promise<T>;

/** A MIME node nodemailer writes as it is. */
export interface RawPart {
  raw: string;
}

/** The part as a MIME node of `contentType` (with its charset), its body encoded in jobs run by `run`. */
export async function encodeTextPart(contentType: string, text: string, run: RunJob): Promise<RawPart> {
  let latin = 0;
  let other = 0;
  for (let from = 0; from < text.length; from += PIECE_CHARS * 4) {
    await run(() => {
      for (let i = from, end = Math.min(text.length, from + PIECE_CHARS * 4); i < end; i++) {
        const code = text.charCodeAt(i);
        if (code <= 0x08 || code === 0x0b || code === 0x0c || (code >= 0x0e && code <= 0x1f) || code >= 0x80) other++;
        else if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)) latin++;
      }
    });
  }
  const quoted = other < latin;
  const body = quoted ? await quotedPrintable(text, run) : await base64(text, run);
  const encoding = quoted ? "quoted-printable" : "base64";
  return { raw: `Content-Type: ${contentType}\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n${body}` };
}

async function quotedPrintable(text: string, run: RunJob): Promise<string> {
  const pieces: string[] = [];
  for (let from = 0; from < text.length; ) {
    const to = pieceEnd(text, from);
    pieces.push(
      await run(() => {
        const wrapped = qpWrap(qpEncode(text.slice(from, to)), LINE);
        // Mid-line: a soft line break joins the piece to the next, and the line it ends must leave
        // room for its "=" (76 characters with it).
        return to < text.length && text.charCodeAt(to - 1) !== 0x0a ? softBreakAtEnd(wrapped) : wrapped;
      }),
    );
    from = to;
  }
  return pieces.join("");
}

/** Where the piece from `from` ends: after a line break if one is near, never inside CRLF or a surrogate pair. */
function pieceEnd(text: string, from: number): number {
  let to = Math.min(text.length, from + PIECE_CHARS);
  if (to === text.length) return to;
  const newline = text.lastIndexOf("\n", to - 1);
  if (newline >= from + PIECE_CHARS / 2) return newline + 1;
  const code = (i: number) => text.charCodeAt(i);
  while (to > from + 1 && (code(to - 1) === 0x0d || code(to) === 0x0a || (code(to - 1) >= 0xd800 && code(to - 1) <= 0xdbff))) to--;
  return to;
}

/** `wrapped` followed by a soft line break, its last line first cut so that the "=" fits (never inside an =XX). */
function softBreakAtEnd(wrapped: string): string {
  const start = wrapped.lastIndexOf("\r\n") + 2;
  const last = wrapped.slice(start);
  if (last.length < LINE) return `${wrapped}=\r\n`;
  let cut = LINE - 1;
  if (last[cut - 1] === "=") cut -= 1;
  else if (last[cut - 2] === "=") cut -= 2;
  return `${wrapped.slice(0, start)}${last.slice(0, cut)}=\r\n${last.slice(cut)}=\r\n`;
}

async function base64(text: string, run: RunJob): Promise<string> {
  const bytes = Buffer.from(text, "utf8");
  const lines: string[] = [];
  for (let from = 0; from < bytes.length; from += BASE64_PIECE_BYTES) {
    lines.push(
      await run(() => {
        const encoded = bytes.subarray(from, Math.min(bytes.length, from + BASE64_PIECE_BYTES)).toString("base64");
        const out: string[] = [];
        for (let i = 0; i < encoded.length; i += LINE) out.push(encoded.slice(i, i + LINE));
        return out.join("\r\n");
      }),
    );
  }
  return lines.join("\r\n");
}
