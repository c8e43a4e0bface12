/**
 * The simulator: an SMTP peer in this process (smtp-server on 127.0.0.1, ephemeral port, no AUTH,
 * no TLS) that the service reaches through the same nodemailer path as a real relay, and that
 * answers by the recipient's local part (before any `+label`), as the design's table says:
 *
 *   delivered (and anything else)  250
 *   bounced                        550 5.1.1 at RCPT
 *   soft-bounce                    552 5.2.2 at RCPT
 *   policy-reject                  550 5.7.26 at the end of DATA (where Gmail and others say it)
 *   deferred                       451 4.3.0 at RCPT, every time
 *   async-bounce                   250, then an RFC 3464 DSN to the copy's envelope sender
 *   complained                     250, then an RFC 5965 ARF to fbl@<the envelope sender's domain>
 *
 * Only `@simulator.test` addresses have behaviours: a test key routes every recipient here, and an
 * address elsewhere behaves as `delivered`. Reports go over SMTP, after `reportDelayMs`, to the
 * configured inbound listener, as a remote MTA would send them. Nothing here may crash the process:
 * every handler answers, every failure to send a report is logged and dropped.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream } from "smtp-server";
import { createTransport, type Transporter } from "nodemailer";
import type { Logger } from "pino";
import { paceReading } from "./paced-read.ts";

export const SIMULATOR_DOMAIN = "simulator.test";

export type SimulatorBehaviour = "delivered" | "bounced" | "soft-bounce" | "policy-reject" | "deferred" | "async-bounce" | "complained";

interface Reply {
  code: number;
  /** Text after the code, starting with the enhanced status. */
  text: string;
}

/** The simulator's answers, as the contract's table lists them (X-EM-7, spec/email/emails.tsp, "The simulator"). */
export const SIMULATOR_REPLIES = {
  bounced: { code: 550, text: "5.1.1 The email account that you tried to reach does not exist." },
  "soft-bounce": { code: 552, text: "5.2.2 The email account that you tried to reach is over quota." },
  "policy-reject": { code: 550, text: "5.7.26 Unauthenticated email is not accepted from this domain." },
  deferred: { code: 451, text: "4.3.0 Temporary failure, try again later." },
} as const satisfies Record<string, Reply>;

const BEHAVIOURS = new Set<string>(["delivered", "bounced", "soft-bounce", "policy-reject", "deferred", "async-bounce", "complained"]);

/** What the simulator does for an address: by local part before `+`, only at simulator.test. */
export function simulatorBehaviour(address: string): SimulatorBehaviour {
  const at = address.lastIndexOf("@");
  if (at < 0 || address.slice(at + 1).toLowerCase() !== SIMULATOR_DOMAIN) return "delivered";
  const local = address.slice(0, at).toLowerCase();
  const plus = local.indexOf("+");
  const base = plus < 0 ? local : local.slice(0, plus);
  return BEHAVIOURS.has(base) ? (base as SimulatorBehaviour) : "delivered";
}

export interface SimulatorOptions {
  /** Where DSNs and ARFs are delivered: the service's inbound listener. */
  inbound: { host: string; port: number };
  logger: Logger;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** Delay before an asynchronous report is sent (default 1000 ms; tests use a few ms). */
  reportDelayMs?: number;
  /** Largest message accepted (default 32 MiB: the API's 10 MiB body, base64 and MIME overhead). */
  maxBytes?: number;
}

export interface Simulator {
  host: string;
  port: number;
  /** Resolves when every report scheduled so far has been sent (or has failed and been logged). */
  settled(): Promise<void>;
  /** Stops listening and drops reports not yet sent (they are a simulation; nothing durable is lost). */
  close(): Promise<void>;
}

// Enough for any real header block; a message whose headers go on longer is enclosed truncated.
const MAX_HEADER_BYTES = 256 * 1024;

/** Start the simulator on 127.0.0.1 (default) and a free port (default). */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const { logger } = options;
  const host = options.host ?? "127.0.0.1";
  const delay = options.reportDelayMs ?? 1000;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();
  let reporter: Transporter | undefined;
  let closed = false;

  const sendReport = (to: string, raw: string, kind: string): void => {
    reporter ??= createTransport({
      host: options.inbound.host,
      port: options.inbound.port,
      ignoreTLS: true,
      pool: true,
      maxConnections: 2,
      connectionTimeout: 5000,
      greetingTimeout: 5000,
      socketTimeout: 10_000,
    });
    // Null reverse-path: a report must never itself be bounced (RFC 3464 §2, RFC 5321 §4.5.5).
    const sending: Promise<void> = reporter
      .sendMail({ envelope: { from: "", to: [to] }, raw })
      .then(
        () => {
          logger.debug({ kind }, "simulator report sent");
        },
        (err: { code?: string; responseCode?: number }) => {
          logger.warn({ kind, code: err.code, responseCode: err.responseCode }, "simulator report not accepted by the inbound listener");
        },
      )
      .finally(() => {
        inFlight.delete(sending);
      });
    inFlight.add(sending);
  };

  const schedule = (fn: () => void): void => {
    if (closed) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (closed) return;
      try {
        fn();
      } catch (err) {
        logger.error({ err }, "simulator report failed to build");
      }
    }, delay);
    timers.add(timer);
  };

  const server = new SMTPServer({
    name: `mx.${SIMULATOR_DOMAIN}`,
    banner: "Email simulator; answers by local part",
    size: options.maxBytes ?? 32 * 1024 * 1024,
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    logger: false,
    // No PTR lookup per connection: nothing here uses the client's host name, and it costs a DNS round trip.
    disableReverseLookup: true,
    closeTimeout: 1000,
    onRcptTo(address, _session, callback) {
      const behaviour = simulatorBehaviour(address.address);
      if (behaviour === "bounced" || behaviour === "soft-bounce" || behaviour === "deferred") {
        return callback(smtpError(SIMULATOR_REPLIES[behaviour]));
      }
      callback();
    },
    onData(stream, session, callback) {
      readHeaders(stream, (headers, sizeExceeded) => {
        try {
          if (sizeExceeded) return callback(smtpError({ code: 552, text: "5.3.4 Message too big for the simulator" }));
          const recipients = session.envelope.rcptTo.map((r) => r.address);
          if (recipients.some((r) => simulatorBehaviour(r) === "policy-reject")) {
            return callback(smtpError(SIMULATOR_REPLIES["policy-reject"]));
          }
          const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
          for (const recipient of recipients) {
            const behaviour = simulatorBehaviour(recipient);
            if (behaviour !== "async-bounce" && behaviour !== "complained") continue;
            if (!mailFrom) {
              logger.info({ behaviour }, "simulator: no envelope sender to report to; report skipped");
              continue;
            }
            const report = { recipient, mailFrom, headers, remoteAddress: session.remoteAddress, arrival: new Date() };
            if (behaviour === "async-bounce") schedule(() => sendReport(mailFrom, buildDsn(report), "dsn"));
            else schedule(() => sendReport(`fbl@${domainOf(mailFrom)}`, buildArf(report), "arf"));
          }
          callback(null, `2.0.0 Accepted by the simulator as ${randomUUID()}`);
        } catch (err) {
          logger.error({ err }, "simulator: unexpected error at DATA");
          callback(smtpError({ code: 451, text: "4.3.0 Simulator error, try again later" }));
        }
      });
    },
  });
  server.on("error", (err) => logger.warn({ err }, "simulator SMTP connection error"));

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    host,
    port,
    async settled() {
      while (timers.size > 0 || inFlight.size > 0) {
        if (inFlight.size > 0) await Promise.all([...inFlight]);
        else await new Promise((r) => setTimeout(r, Math.max(1, Math.min(delay, 10))));
      }
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all([...inFlight]);
      reporter?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function smtpError(reply: Reply): Error {
  return Object.assign(new Error(reply.text), { responseCode: reply.code });
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1).toLowerCase();
}

/** Keep the header block of a message (up to MAX_HEADER_BYTES), drain the rest without holding it. */
function readHeaders(stream: SMTPServerDataStream, done: (headers: string, sizeExceeded: boolean) => void): void {
  const chunks: Buffer[] = [];
  let kept = 0;
  let complete = false;
  stream.on("data", (chunk: Buffer) => {
    if (complete || kept >= MAX_HEADER_BYTES) return;
    chunks.push(chunk);
    kept += chunk.length;
    if (Buffer.concat(chunks).indexOf("\r\n\r\n") >= 0) complete = true;
  });
  // Copies of a large message arrive side by side: each is read a piece at a time, not whole in one go.
  paceReading(stream);
  stream.once("end", () => {
    const all = Buffer.concat(chunks).subarray(0, MAX_HEADER_BYTES).toString("utf8");
    const end = all.search(/\r?\n\r?\n/);
    done((end < 0 ? all : all.slice(0, end)).replace(/\r?\n/g, "\r\n"), stream.sizeExceeded);
  });
  stream.once("error", () => done("", stream.sizeExceeded));
}

interface ReportInput {
  recipient: string;
  mailFrom: string;
  /** The copy's header block, CRLF line ends, no trailing blank line. */
  headers: string;
  remoteAddress: string;
  arrival: Date;
}

/** An RFC 5322 date (`Tue, 01 Dec 2026 10:00:00 +0000`). */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, "+0000");
}

/** The fields of a header block: only ASCII printable and CRLF survive into a report. */
function enclosedHeaders(headers: string): { text: string; encoding: "7bit" | "8bit" } {
  return { text: headers, encoding: /[^\x00-\x7f]/.test(headers) ? "8bit" : "7bit" };
}

function headerValue(headers: string, name: string): string | undefined {
  const unfolded = headers.replace(/\r\n[ \t]+/g, " ");
  const prefix = `${name.toLowerCase()}:`;
  for (const line of unfolded.split("\r\n")) {
    if (line.toLowerCase().startsWith(prefix)) return line.slice(prefix.length).trim();
  }
  return undefined;
}

function envelopeHeaders(from: string, to: string, subject: string, reportType: string, boundary: string, date: Date): string {
  return [
    `From: ${from}`,
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date(date)}`,
    `Message-ID: <${randomUUID()}@${SIMULATOR_DOMAIN}>`,
    "Auto-Submitted: auto-replied", // RFC 3834: no auto-responder answers this
    "MIME-Version: 1.0",
    `Content-Type: multipart/report; report-type=${reportType}; boundary="${boundary}"`,
  ].join("\r\n");
}

/** An RFC 3464 DSN in an RFC 6522 multipart/report: Action failed, Status 5.1.1, for one recipient. */
export function buildDsn(input: ReportInput, now: Date = new Date()): string {
  const boundary = `dsn-${randomBytes(12).toString("hex")}`;
  const reply = SIMULATOR_REPLIES.bounced;
  const enclosed = enclosedHeaders(input.headers);
  return [
    envelopeHeaders(
      `Mail Delivery System <MAILER-DAEMON@${SIMULATOR_DOMAIN}>`,
      input.mailFrom,
      "Undelivered Mail Returned to Sender",
      "delivery-status",
      boundary,
      now,
    ),
    "",
    "This is a MIME-encapsulated message.",
    "",
    `--${boundary}`,
    "Content-Type: text/plain; charset=us-ascii",
    "Content-Description: Notification",
    "",
    `This is the mail system at host mx.${SIMULATOR_DOMAIN}.`,
    "",
    "Your message could not be delivered to one or more recipients.",
    "",
    `<${input.recipient}>: host mx.${SIMULATOR_DOMAIN} said: ${reply.code} ${reply.text}`,
    "",
    `--${boundary}`,
    "Content-Type: message/delivery-status",
    "Content-Description: Delivery report",
    "",
    `Reporting-MTA: dns; mx.${SIMULATOR_DOMAIN}`,
    `Arrival-Date: ${rfc5322Date(input.arrival)}`,
    "",
    `Final-Recipient: rfc822; ${input.recipient}`,
    `Original-Recipient: rfc822; ${input.recipient}`,
    "Action: failed",
    "Status: 5.1.1",
    `Remote-MTA: dns; mx.${SIMULATOR_DOMAIN}`,
    `Diagnostic-Code: smtp; ${reply.code} ${reply.text}`,
    `Last-Attempt-Date: ${rfc5322Date(now)}`,
    "",
    ...enclosedHeadersPart(boundary, enclosed, "Undelivered Message Headers"),
  ].join("\r\n");
}

/** An RFC 5965 ARF report (Feedback-Type: abuse) enclosing the copy's header block. */
export function buildArf(input: ReportInput, now: Date = new Date()): string {
  const boundary = `arf-${randomBytes(12).toString("hex")}`;
  const enclosed = enclosedHeaders(input.headers);
  const from = headerValue(input.headers, "From") ?? "";
  const reportedDomain = /@([^>\s]+)>?\s*$/.exec(from)?.[1]?.toLowerCase();
  return [
    envelopeHeaders(
      `Simulator Feedback Loop <fbl-reports@${SIMULATOR_DOMAIN}>`,
      `fbl@${domainOf(input.mailFrom)}`,
      "Email abuse report",
      "feedback-report",
      boundary,
      now,
    ),
    "",
    "This is a MIME-formatted message.",
    "",
    `--${boundary}`,
    "Content-Type: text/plain; charset=us-ascii",
    "",
    `This is an email abuse report for a message received from IP ${input.remoteAddress} on ${rfc5322Date(input.arrival)}.`,
    "The recipient marked it as spam.",
    "",
    `--${boundary}`,
    "Content-Type: message/feedback-report",
    "",
    "Feedback-Type: abuse",
    `User-Agent: ${SIMULATOR_DOMAIN}-fbl/1.0`,
    "Version: 1",
    `Original-Mail-From: <${input.mailFrom}>`,
    `Original-Rcpt-To: <${input.recipient}>`,
    `Arrival-Date: ${rfc5322Date(input.arrival)}`,
    ...(reportedDomain ? [`Reported-Domain: ${reportedDomain}`] : []),
    `Source-IP: ${input.remoteAddress}`,
    "",
    ...enclosedHeadersPart(boundary, enclosed),
  ].join("\r\n");
}

/** The last part of a report (RFC 3462 §2, RFC 5965 §2): the copy's header block, then the closing boundary. */
function enclosedHeadersPart(boundary: string, enclosed: { encoding: string; text: string }, description?: string): string[] {
  return [
    `--${boundary}`,
    "Content-Type: text/rfc822-headers",
    ...(description ? [`Content-Description: ${description}`] : []),
    `Content-Transfer-Encoding: ${enclosed.encoding}`,
    "",
    enclosed.text,
    "",
    `--${boundary}--`,
    "",
  ];
}
