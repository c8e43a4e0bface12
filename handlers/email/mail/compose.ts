/**
 * One recipient's copy of a message, as nodemailer message options plus its SMTP envelope.
 *
 * Every recipient gets its own copy (design M6): its `To:` shows only that recipient, its envelope
 * names only that recipient (one RCPT per transaction, so a reply code belongs to exactly one
 * recipient), its Message-ID is its own (an ARF names the copy it complains about by it), and its
 * envelope sender is a per-copy VERP address `bounces+<token>@<bounce domain>` (so an asynchronous
 * DSN can be tied to the copy without trusting anything inside the bounce).
 */
import { randomUUID } from "node:crypto";
import MailComposer from "nodemailer/lib/mail-composer";
import type { SendMailOptions } from "nodemailer";
import { pooledRandomBytes } from "../../../server/security/random.ts";
import type { RawPart } from "./text-parts.ts";

/** An attachment as the API takes it; `content` is base64 text, or bytes already decoded once per message. */
export interface CopyAttachment {
  filename: string;
  contentType: string;
  content: string | Buffer;
  /** Makes the part inline (`Content-Disposition: inline`), referenced from the HTML as `cid:<contentId>`. */
  contentId?: string | undefined;
}

export interface CopyInput {
  /** The sender's address (its domain was checked against the sending domains upstream). */
  from: string;
  fromName?: string | undefined;
  /** This copy's one recipient. */
  to: string;
  replyTo?: readonly string[] | undefined;
  subject: string;
  /** The bodies: as text, or a finished MIME node (text-parts.ts: a large part encoded in pieces). */
  text?: string | RawPart | undefined;
  html?: string | RawPart | undefined;
  /** Custom headers, already validated upstream (names allowed, values without CR/LF/NUL). */
  headers?: Readonly<Record<string, string>> | undefined;
  attachments?: readonly CopyAttachment[] | undefined;
  /** This copy's RFC 5322 Message-ID, `<uuid@sending-domain>` (see `newMessageId`). */
  messageId: string;
  /** Envelope sender (Return-Path), normally `verpAddress(token, bounceDomain)`. */
  returnPath: string;
  /**
   * Gmail's Feedback-ID (`a:b:c:SenderId`, e.g. `<messageId>:<keyPrefix>:transactional:<deployment>`):
   * Postmaster Tools then reports complaint rates per value. Optional.
   */
  feedbackId?: string | undefined;
  date?: Date | undefined;
}

/** A copy ready for a transport. `mail` is handed to nodemailer as is. */
export interface OutgoingCopy {
  recipient: string;
  messageId: string;
  envelope: { from: string; to: [string] };
  mail: SendMailOptions;
}

// Header injection is the one thing a composer must never let through, whatever upstream promised.
const UNSAFE_HEADER_VALUE = /[\r\n\0]/;
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/; // RFC 5322 §3.6.8 ftext: printable ASCII except ":"

/** Build one recipient's copy. Throws `TypeError` on input that would corrupt the MIME (a bug upstream). */
export function composeCopy(input: CopyInput): OutgoingCopy {
  if (!/^<[^<>\s]+@[^<>\s]+>$/.test(input.messageId)) throw new TypeError("messageId must look like <id@domain>");
  for (const value of [input.from, input.to, input.returnPath, input.subject, input.fromName ?? "", input.feedbackId ?? ""]) {
    if (UNSAFE_HEADER_VALUE.test(value)) throw new TypeError("CR, LF or NUL in an address, name or subject");
  }
  const headers: Record<string, string> = {};
  if (input.headers) {
    for (const name of Object.keys(input.headers)) {
      const value = input.headers[name]!;
      if (!HEADER_NAME.test(name) || UNSAFE_HEADER_VALUE.test(value)) throw new TypeError(`unsafe custom header ${JSON.stringify(name)}`);
      headers[name] = value;
    }
  }
  if (input.feedbackId) headers["Feedback-ID"] = input.feedbackId;

  const mail: SendMailOptions = {
    from: input.fromName ? { name: input.fromName, address: input.from } : input.from,
    to: input.to,
    subject: input.subject,
    messageId: input.messageId,
    envelope: { from: input.returnPath, to: [input.to] },
    headers,
    // No product banner in every message, and never let a content field read a file or a URL.
    xMailer: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  if (input.replyTo && input.replyTo.length > 0) mail.replyTo = [...input.replyTo];
  if (input.text !== undefined) mail.text = input.text;
  if (input.html !== undefined) mail.html = input.html;
  if (input.date) mail.date = input.date;
  if (input.attachments && input.attachments.length > 0) {
    mail.attachments = input.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
      ...(typeof a.content === "string" ? { encoding: "base64" } : {}),
      ...(a.contentId ? { cid: a.contentId, contentDisposition: "inline" } : { contentDisposition: "attachment" }),
    }));
  }
  return { recipient: input.to, messageId: input.messageId, envelope: { from: input.returnPath, to: [input.to] }, mail };
}

/** The copy's MIME as the relay will receive it (before DKIM): for the record's rendered view and tests. */
export function renderCopy(copy: OutgoingCopy): Promise<Buffer> {
  return new MailComposer(copy.mail).compile().build();
}

/** A fresh Message-ID for a copy: `<uuid@domain>` (RFC 5322 §3.6.4), the domain being the sending domain. */
export function newMessageId(domain: string): string {
  return `<${randomUUID()}@${domain.toLowerCase()}>`;
}

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/**
 * A VERP token: 16 random bytes as 26 lowercase base32 characters (RFC 4648 alphabet). Lowercase on
 * purpose: local parts are case-sensitive on paper, but some MTAs fold them, and a folded base64url
 * token would no longer match.
 */
export function newVerpToken(): string {
  const bytes = pooledRandomBytes(16);
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/** A tracking token (opens, clicks): 16 random bytes, 22 base64url characters. */
export function newTrackingToken(): string {
  return pooledRandomBytes(16).toString("base64url");
}

/** The envelope sender of a copy: `bounces+<token>@<bounce domain>`. */
export function verpAddress(token: string, bounceDomain: string): string {
  return `bounces+${token}@${bounceDomain.toLowerCase()}`;
}

/** The token of a VERP address, or null when the address is not one of ours for that bounce domain. */
export function parseVerpAddress(address: string, bounceDomain: string): string | null {
  const at = address.lastIndexOf("@");
  if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain.toLowerCase()) return null;
  const m = /^bounces\+([A-Za-z0-9_-]{16,128})$/i.exec(address.slice(0, at));
  return m ? m[1]! : null;
}
