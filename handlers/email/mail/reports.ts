/**
 * Reading the two kinds of report a mail system sends back after it accepted a copy:
 *
 * - a delivery status notification, RFC 3464 (inside an RFC 6522 multipart/report;
 *   report-type=delivery-status): per recipient Final-Recipient / Original-Recipient, Action,
 *   Status, Diagnostic-Code;
 * - an abuse feedback report, RFC 5965 ARF (multipart/report; report-type=feedback-report):
 *   Feedback-Type and the enclosed original message or its headers, whose Message-ID names the copy.
 *
 * Syntax only: whether a report belongs to a copy (its token, its recipient, its Message-ID) is the
 * caller's decision. Anything that is not a proper report is returned as `dropped` with a reason;
 * this module never throws on input.
 */
import { simpleParser, type Attachment } from "mailparser";

export type DsnAction = "failed" | "delayed" | "delivered" | "relayed" | "expanded";

export interface DsnRecipient {
  /** Final-Recipient's address (the type prefix `rfc822;` removed), or null when absent. */
  recipient: string | null;
  /** Original-Recipient's address, when the reporting MTA gave it. */
  originalRecipient: string | null;
  action: DsnAction;
  /** RFC 3463 status, e.g. `5.1.1`; null when missing or malformed. */
  status: string | null;
  /** Diagnostic-Code without its type prefix (`smtp; 550 5.1.1 …` → `550 5.1.1 …`). */
  diagnostic: string | null;
}

export interface DsnContent {
  kind: "dsn";
  reportingMta: string | null;
  recipients: DsnRecipient[];
}

export interface ArfContent {
  kind: "arf";
  /** Lowercased: abuse, fraud, virus, other, not-spam (RFC 6650), auth-failure (RFC 6591), … */
  feedbackType: string;
  userAgent: string | null;
  version: string | null;
  /** The enclosed original's Message-ID, `<id@domain>` as issued, or null when none was enclosed. */
  originalMessageId: string | null;
  originalMailFrom: string | null;
  originalRcptTo: string[];
  arrivalDate: string | null;
  sourceIp: string | null;
  reportedDomains: string[];
}

export type ReportContent = DsnContent | ArfContent;
export type ParsedReport = { ok: true; report: ReportContent } | { ok: false; reason: string };

const ACTIONS = new Set<string>(["failed", "delayed", "delivered", "relayed", "expanded"]);
const DELIVERY_STATUS_TYPES = new Set(["message/delivery-status", "message/global-delivery-status"]);
const FEEDBACK_TYPES = new Set(["message/feedback-report"]);
// text/rfc822-headers is the registered type (RFC 6522 §4); the others are seen in the wild.
const ENCLOSED_TYPES = new Set([
  "message/rfc822",
  "text/rfc822-headers",
  "message/rfc822-headers",
  "message/global",
  "message/global-headers",
]);
const MAX_TEXT = 512;

/** Parse a raw message as a DSN or an ARF report. */
export async function parseReport(raw: Buffer): Promise<ParsedReport> {
  let attachments: Attachment[];
  try {
    const parsed = await simpleParser(raw, {
      // Keep message/delivery-status as a part of its own instead of merging it into the text, and
      // keep an inline message/rfc822 whole (mailsplit's ignoreEmbedded, passed through by mailparser)
      // instead of flattening it into the text, which loses the enclosed Message-ID.
      keepDeliveryStatus: true,
      ignoreEmbedded: true,
      // Nothing here reads the human-readable parts: skip the HTML/text conversions.
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
    } as Parameters<typeof simpleParser>[1]);
    attachments = parsed.attachments;
  } catch {
    return { ok: false, reason: "unparsable MIME" };
  }

  const feedback = attachments.find((a) => FEEDBACK_TYPES.has(a.contentType.toLowerCase()));
  if (feedback)
    return parseArf(
      feedback,
      attachments.find((a) => ENCLOSED_TYPES.has(a.contentType.toLowerCase())),
    );
  const status = attachments.find((a) => DELIVERY_STATUS_TYPES.has(a.contentType.toLowerCase()));
  if (status) return parseDsn(status.content.toString("utf8"));
  return { ok: false, reason: "neither a delivery status notification nor a feedback report" };
}

function parseDsn(text: string): ParsedReport {
  const groups = parseFieldGroups(text);
  if (groups.length < 2) return { ok: false, reason: "delivery status without a per-recipient block" };
  const perMessage = groups[0]!;
  const recipients: DsnRecipient[] = [];
  for (const fields of groups.slice(1)) {
    const action = stripComment(first(fields, "action") ?? "").toLowerCase();
    if (!ACTIONS.has(action)) continue;
    recipients.push({
      recipient: typedAddress(first(fields, "final-recipient")),
      originalRecipient: typedAddress(first(fields, "original-recipient")),
      action: action as DsnAction,
      status: statusCode(first(fields, "status")),
      diagnostic: diagnostic(first(fields, "diagnostic-code")),
    });
  }
  if (recipients.length === 0) return { ok: false, reason: "delivery status without a valid recipient block" };
  return { ok: true, report: { kind: "dsn", reportingMta: typedValue(first(perMessage, "reporting-mta")), recipients } };
}

function parseArf(feedback: Attachment, enclosed: Attachment | undefined): ParsedReport {
  const groups = parseFieldGroups(feedback.content.toString("utf8"));
  const fields = groups[0];
  const feedbackType = fields ? stripComment(first(fields, "feedback-type") ?? "").toLowerCase() : "";
  if (!fields || !/^[a-z0-9-]+$/.test(feedbackType)) return { ok: false, reason: "feedback report without a Feedback-Type" };
  let originalMessageId: string | null = null;
  if (enclosed) {
    const headers = parseFieldGroups(headerBlock(enclosed.content.toString("utf8")))[0];
    originalMessageId = headers ? messageId(first(headers, "message-id")) : null;
  }
  return {
    ok: true,
    report: {
      kind: "arf",
      feedbackType,
      userAgent: clip(first(fields, "user-agent")),
      version: clip(first(fields, "version")),
      originalMessageId,
      originalMailFrom: angleless(first(fields, "original-mail-from")),
      originalRcptTo: (fields.get("original-rcpt-to") ?? []).map((v) => angleless(v)).filter((v): v is string => v !== null),
      arrivalDate: clip(first(fields, "arrival-date") ?? first(fields, "received-date")),
      sourceIp: clip(first(fields, "source-ip")),
      reportedDomains: (fields.get("reported-domain") ?? []).map((v) => v.trim().toLowerCase()).filter((v) => v !== ""),
    },
  };
}

/**
 * RFC 822-style field groups separated by blank lines (the layout of RFC 3464 §2.1 and RFC 5965
 * §3.1), folded lines unfolded, names lowercased; a name may repeat.
 */
export function parseFieldGroups(text: string): Array<Map<string, string[]>> {
  const groups: Array<Map<string, string[]>> = [];
  let current: Map<string, string[]> | null = null;
  let lastName: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") {
      current = null;
      lastName = null;
      continue;
    }
    if ((line[0] === " " || line[0] === "\t") && current && lastName) {
      const values = current.get(lastName)!;
      values[values.length - 1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue; // not a field: skip the line, keep the group
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
    if (!current) {
      current = new Map();
      groups.push(current);
    }
    const values = current.get(name);
    if (values) values.push(line.slice(colon + 1).trim());
    else current.set(name, [line.slice(colon + 1).trim()]);
    lastName = name;
  }
  return groups;
}

function first(fields: Map<string, string[]>, name: string): string | undefined {
  return fields.get(name)?.[0];
}

/** The header block of an enclosed message (up to its first blank line). */
function headerBlock(text: string): string {
  const end = text.search(/\r?\n\r?\n/);
  return end < 0 ? text : text.slice(0, end);
}

/** RFC 822 comments `(…)` out of a structured value (one level is all reports use). */
function stripComment(value: string): string {
  return value.replace(/\([^()]*\)/g, "").trim();
}

/** `rfc822; ada@example.com` → `ada@example.com` (RFC 3464 §2.3.2; also `utf-8;` from RFC 6533). */
function typedAddress(value: string | undefined): string | null {
  const v = typedValue(value);
  return v === null ? null : angleless(v);
}

function typedValue(value: string | undefined): string | null {
  if (value === undefined) return null;
  const semi = value.indexOf(";");
  const v = (semi < 0 ? value : value.slice(semi + 1)).trim();
  return v === "" ? null : clip(v);
}

function angleless(value: string | undefined): string | null {
  if (value === undefined) return null;
  const v = value
    .trim()
    .replace(/^<(.*)>$/, "$1")
    .trim();
  return v === "" ? null : clip(v);
}

function statusCode(value: string | undefined): string | null {
  const m = /^([245])\.(\d{1,3})\.(\d{1,3})\b/.exec(stripComment(value ?? ""));
  return m ? `${m[1]}.${Number(m[2])}.${Number(m[3])}` : null;
}

/** `smtp; 550 5.1.1 …` → `550 5.1.1 …` (design: the type prefix is stripped). */
function diagnostic(value: string | undefined): string | null {
  if (value === undefined) return null;
  const m = /^[A-Za-z0-9-]+\s*;\s*/.exec(value);
  return clip((m ? value.slice(m[0].length) : value).replace(/\s+/g, " "));
}

function messageId(value: string | undefined): string | null {
  const m = /<([^<>\s]+)>/.exec(value ?? "");
  if (m) return `<${m[1]}>`;
  const bare = (value ?? "").trim();
  return /^[^<>\s@]+@[^<>\s@]+$/.test(bare) ? `<${bare}>` : null;
}

function clip(value: string | undefined): string | null {
  if (value === undefined) return null;
  const v = value.replace(/[\u0000-\u001f\u007f]/g, " ").trim();
  if (v === "") return null;
  return v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) : v;
}
