/**
 * What an SMTP exchange meant for one recipient's copy: the contract's outcome table (X-EM-16,
 * spec/email/emails.tsp, "Outcomes") as one pure function, so the transport, the DSN intake and the
 * tests agree.
 *
 * - 2xx after DATA                                   → delivered
 * - 5xx with enhanced 5.1.x or 5.2.1, or a bare 550/551/553 (no enhanced code) → hard_bounce (suppress)
 * - any other 5xx (5.2.2 full, 5.3.x, 5.6.x, 5.7.x policy such as 5.7.26, size) → soft_bounce
 * - 4xx at any stage                                 → retry
 * - no answer at all (connection, TLS, AUTH, time-out) → relay_failure (the caller retries it too,
 *   but its last attempt ends `Failed`, not `Bounced`: the relay never took the message)
 *
 * Enhanced status codes: RFC 3463 (classes and subjects), RFC 2034 (how they prefix a reply).
 */

export const SMTP_OUTCOME_KINDS = ["delivered", "hard_bounce", "soft_bounce", "retry", "relay_failure"] as const;
export type SmtpOutcomeKind = (typeof SMTP_OUTCOME_KINDS)[number];

export interface SmtpOutcome {
  kind: SmtpOutcomeKind;
  /** The last reply line, normalised to one line (`550 5.1.1 The email account …`), or what failed. */
  smtpResponse: string;
  /** RFC 3463 enhanced status (`5.1.1`) when the server gave one. */
  smtpStatus: string | null;
}

/** One SMTP answer, or the failure to get one, as nodemailer reports it. */
export interface SmtpReply {
  /** The reply code (250, 451, 550, …); absent when the server never answered. */
  code?: number | undefined;
  /** The raw reply text, possibly multi-line (`550-5.1.1 …\n550 5.1.1 …`). */
  response?: string | undefined;
  /** nodemailer's error code: ECONNECTION, ETIMEDOUT, ESOCKET, EDNS, ETLS, EAUTH, EENVELOPE, EMESSAGE, … */
  errorCode?: string | undefined;
  /** The command that got the answer (`MAIL FROM`, `RCPT TO`, `DATA`, `AUTH PLAIN`, `CONN`, `API`). */
  command?: string | undefined;
  /** The error's message, used only when there is no reply text to show. */
  message?: string | undefined;
}

/** Longest text kept: the record and the events carry it; a hostile server could send a megabyte. */
const MAX_RESPONSE_CHARS = 512;

// `550-5.1.1 text` or `550 5.1.1 text`: code, separator, optional enhanced status (class.subject.detail).
const REPLY_LINE = /^([2-5]\d\d)(?:[ -]|$)(?:([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$))?/;

/**
 * The enhanced status of a reply, e.g. "550 5.1.1 No such user" → "5.1.1". RFC 2034 §3: its class
 * must equal the reply code's first digit; a mismatched one is ignored as unreliable.
 */
export function parseEnhancedStatus(response: string): string | null {
  const m = REPLY_LINE.exec(response.trimStart());
  if (!m || m[2] === undefined) return null;
  if (m[2] !== m[1]![0]) return null;
  return `${m[2]}.${Number(m[3])}.${Number(m[4])}`;
}

/**
 * One line out of a (possibly multi-line) reply: Gmail answers `550-5.1.1 The email account…\r\n550-5.1.1
 * double-check…\r\n550 5.1.1 https://…`; the record wants `550 5.1.1 The email account… double-check… https://…`.
 */
export function normaliseReply(response: string): string {
  const lines = response.split(/\r?\n/);
  let head = "";
  const texts: string[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "") continue;
    const m = REPLY_LINE.exec(line);
    if (!m) {
      texts.push(line);
      continue;
    }
    if (head === "") head = m[2] !== undefined ? `${m[1]} ${m[2]}.${Number(m[3])}.${Number(m[4])}` : m[1]!;
    const text = line.slice(m[0].length).trim();
    if (text !== "") texts.push(text);
  }
  const joined = [head, ...texts].filter((s) => s !== "").join(" ");
  // Control characters would end up in JSON events and logs; a reply has no business carrying them.
  const clean = joined.replace(/[\u0000-\u001f\u007f]/g, " ");
  return clean.length > MAX_RESPONSE_CHARS ? `${clean.slice(0, MAX_RESPONSE_CHARS - 1)}…` : clean;
}

/** Hard or soft, for a 5.x.x status from a reply or a DSN's `Status:` (design: 5.1.x and 5.2.1 are hard). */
export function bounceTypeForStatus(status: string): "hard" | "soft" {
  const m = /^5\.(\d{1,3})\.(\d{1,3})$/.exec(status.trim());
  if (!m) return "soft";
  const subject = Number(m[1]);
  const detail = Number(m[2]);
  // 5.1.7 / 5.1.8 name the SENDER's address (RFC 3463 §3.2): suppressing the recipient would be wrong.
  if (subject === 1) return detail === 7 || detail === 8 ? "soft" : "hard";
  if (subject === 2 && detail === 1) return "hard";
  return "soft";
}

// Reply codes that mean "no such mailbox" when a server gives no enhanced status (RFC 5321 §4.2.3).
const BARE_HARD_CODES = new Set([550, 551, 553]);

// nodemailer codes for "we never got a usable answer from the server".
const RELAY_FAILURE_CODES = new Set([
  "ECONNECTION",
  "ETIMEDOUT",
  "ESOCKET",
  "EDNS",
  "ETLS",
  "EREQUIRETLS",
  "EAUTH",
  "ENOAUTH",
  "EOAUTH2",
  "EPROTOCOL",
  "EPROXY",
  "ECONFIG",
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENOTFOUND",
]);

// nodemailer codes for a copy it refused to send before talking to the server.
const LOCAL_PERMANENT_CODES = new Set(["EENVELOPE", "EMESSAGE", "ESTREAM", "EFILEACCESS", "EURLACCESS", "EMAXRECIPIENTS"]);

/** Classify one SMTP answer (or the failure to get one) per the design's table. */
export function classifySmtpReply(reply: SmtpReply): SmtpOutcome {
  const response = reply.response?.trim() ? normaliseReply(reply.response) : "";
  const code = reply.code ?? codeOf(response);
  const smtpStatus = response ? parseEnhancedStatus(response) : null;
  const command = (reply.command ?? "").toUpperCase();

  if (code === undefined) return noAnswer(reply);

  const shown = response || String(code);
  if (code >= 200 && code < 300) return { kind: "delivered", smtpResponse: shown, smtpStatus };
  if (code >= 400 && code < 500) return { kind: "retry", smtpResponse: shown, smtpStatus };
  if (code < 500 || code > 599) {
    // 1xx/3xx as a final answer is a protocol violation: the relay misbehaved, try again later.
    return { kind: "relay_failure", smtpResponse: shown, smtpStatus };
  }

  // A 5xx before any recipient was named is about us, never about the recipient's mailbox.
  if (command.startsWith("AUTH") || command === "EHLO" || command === "HELO" || command === "STARTTLS" || command === "CONN") {
    return { kind: "relay_failure", smtpResponse: shown, smtpStatus };
  }
  if (command === "MAIL FROM") {
    // 530 / 5.7.0 "authentication required": our relay configuration is wrong; retrying after a fix helps.
    if (code === 530 || smtpStatus === "5.7.0") return { kind: "relay_failure", smtpResponse: shown, smtpStatus };
    return { kind: "soft_bounce", smtpResponse: shown, smtpStatus };
  }

  if (smtpStatus !== null) {
    return { kind: bounceTypeForStatus(smtpStatus) === "hard" ? "hard_bounce" : "soft_bounce", smtpResponse: shown, smtpStatus };
  }
  return { kind: BARE_HARD_CODES.has(code) ? "hard_bounce" : "soft_bounce", smtpResponse: shown, smtpStatus };
}

function codeOf(response: string): number | undefined {
  const m = /^([2-5]\d\d)\b/.exec(response);
  return m ? Number(m[1]) : undefined;
}

function noAnswer(reply: SmtpReply): SmtpOutcome {
  const errorCode = reply.errorCode ?? "";
  const message = firstLine(reply.message ?? "") || "no answer from the server";
  // nodemailer refuses a message bigger than the server's advertised SIZE before sending it (RFC 1870):
  // the server would have answered 552 5.3.4, a permanent failure of this message, not of the relay.
  if (errorCode === "EMESSAGE" && /larger than allowed/i.test(message)) {
    return { kind: "soft_bounce", smtpResponse: "552 5.3.4 Message size exceeds the server's limit (SIZE)", smtpStatus: "5.3.4" };
  }
  // Refused by nodemailer itself before any I/O (bad address syntax, unreadable content): the same copy
  // fails the same way on every retry, and it says nothing about the recipient's mailbox.
  if ((reply.command ?? "").toUpperCase() === "API" && LOCAL_PERMANENT_CODES.has(errorCode)) {
    return { kind: "soft_bounce", smtpResponse: clip(`${errorCode}: ${message}`), smtpStatus: null };
  }
  if (errorCode === "EMAXLIMIT") return { kind: "retry", smtpResponse: `${errorCode}: ${message}`, smtpStatus: null };
  const label = errorCode && RELAY_FAILURE_CODES.has(errorCode) ? errorCode : errorCode || "ERROR";
  return { kind: "relay_failure", smtpResponse: clip(`${label}: ${message}`), smtpStatus: null };
}

function firstLine(s: string): string {
  const i = s.indexOf("\n");
  return (i < 0 ? s : s.slice(0, i)).trim();
}

function clip(s: string): string {
  const clean = s.replace(/[\u0000-\u001f\u007f]/g, " ");
  return clean.length > MAX_RESPONSE_CHARS ? `${clean.slice(0, MAX_RESPONSE_CHARS - 1)}…` : clean;
}

/** The parts of a nodemailer error this module reads (its `SMTPError`-like shape). */
export interface NodemailerErrorLike {
  code?: string | undefined;
  responseCode?: number | false | undefined;
  response?: string | undefined;
  command?: string | undefined;
  message?: string | undefined;
}

/** Classify a rejected `sendMail` (nodemailer error with `code`, `responseCode`, `response`, `command`). */
export function classifySendError(err: unknown): SmtpOutcome {
  const e = (err ?? {}) as NodemailerErrorLike;
  const response = typeof e.response === "string" ? e.response : undefined;
  const code = typeof e.responseCode === "number" ? e.responseCode : undefined;
  return classifySmtpReply({
    code: response || code !== undefined ? code : undefined,
    response,
    errorCode: typeof e.code === "string" ? e.code : undefined,
    command: typeof e.command === "string" ? e.command : undefined,
    message: typeof e.message === "string" ? e.message : String(err),
  });
}

/** Classify a resolved `sendMail` (its `response` is the server's answer to the end of DATA). */
export function classifySendInfo(info: { response?: string | undefined }): SmtpOutcome {
  const response = info.response?.trim() ?? "";
  // A resolved send means the server accepted DATA; a transport that reports no text still delivered.
  if (codeOf(response) === undefined) return { kind: "delivered", smtpResponse: response || "250", smtpStatus: null };
  return classifySmtpReply({ response, command: "DATA" });
}
