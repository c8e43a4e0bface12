/**
 * The inbound SMTP listener for asynchronous bounces and complaints (design M8).
 *
 * It takes mail for exactly two kinds of address at the bounce domain, and refuses everything else
 * at RCPT with 550 5.7.1, so it can never be used as an open relay:
 *   bounces+<token>@<bounce domain>   a copy's VERP return path: DSNs (RFC 3464) land here
 *   fbl@<bounce domain>               feedback loops: ARF reports (RFC 5965) land here
 *
 * A message is parsed (reports.ts) and handed to `onReport` with the token it arrived at; matching
 * it to a copy (token, recipient, Message-ID) is the caller's job. The sender is answered 250 once
 * the report is parsed and `onReport` has returned; unmatched or malformed reports are logged
 * (token and reason only: no addresses, no bodies) and dropped, also with 250, because rejecting a
 * report only makes a remote MTA bounce the bounce. When `onReport` throws (our storage is down)
 * the answer is 451 so the reporting MTA retries later: a bounce must not be lost to our own fault.
 */
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream } from "smtp-server";
import type { Logger } from "pino";
import { parseVerpAddress } from "./compose.ts";
import { paceReading } from "./paced-read.ts";
import { parseReport, type ArfContent, type DsnContent, type ParsedReport } from "./reports.ts";
import { createSessionGuard } from "./inbound-sessions.ts";

export type { DsnAction, DsnRecipient } from "./reports.ts";

export interface DsnReport extends DsnContent {
  /** The VERP token of the address the DSN arrived at. */
  token: string;
}

export interface ArfReport extends ArfContent {
  /** The VERP token when the ARF arrived at a copy's return path (some FBLs send there), else null. */
  token: string | null;
}

export type InboundReport = DsnReport | ArfReport;

export interface InboundListenerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /**
   * The domain(s) of the VERP return paths and of fbl@: the deployment's EMAIL_BOUNCE_DOMAIN and,
   * for the simulator's copies, bounces.simulator.test. A token is unique whatever its domain.
   */
  bounceDomain: string | readonly string[];
  logger: Logger;
  /** Called once per report; awaited before the SMTP answer. Throw to have the sender retry (451). */
  onReport(report: InboundReport): void | Promise<void>;
  /**
   * Reads a message as a report (default `parseReport`, on this thread). The service passes its
   * parsing thread's (parse-thread.ts): a large report parsed here would stall the event loop. A
   * rejection is our fault, answered 451 like a failing `onReport`.
   */
  parse?: (raw: Buffer) => Promise<ParsedReport>;
  /** Largest message accepted (default 1 MiB): reports are small; a DSN enclosing a whole message is cut off by its MTA. */
  maxBytes?: number;
  /** Concurrent SMTP sessions (default 100). */
  maxClients?: number;
  /** Concurrent sessions from one peer, IPv4 address or IPv6 /64 (default 10; inbound-sessions.ts). */
  maxClientsPerPeer?: number;
  /** How long a session may stand before MAIL FROM, after its greeting or its last message (default 10 s; inbound-sessions.ts). */
  idleBeforeMailMs?: number;
  /** How long one transaction may last from its MAIL FROM, NOOPs or not (default 10 minutes). */
  transactionMs?: number;
  /** Host name in the greeting and EHLO answer (default: the bounce domain). */
  name?: string;
  /** Certificate and key (PEM) to offer STARTTLS; without them STARTTLS is not offered. */
  tls?: { key: string | Buffer; cert: string | Buffer } | undefined;
  /** Idle time before a session inside a transaction is closed (default 60 s). */
  socketTimeoutMs?: number;
}

export interface InboundListener {
  host: string;
  port: number;
  close(): Promise<void>;
}

const MAX_RECIPIENTS = 20;

/** Start the listener; resolves once it accepts connections. */
export async function createInboundListener(options: InboundListenerOptions): Promise<InboundListener> {
  const { logger } = options;
  const domains = (typeof options.bounceDomain === "string" ? [options.bounceDomain] : [...options.bounceDomain]).map((d) =>
    d.toLowerCase(),
  );
  if (domains.length === 0) throw new TypeError("createInboundListener: at least one bounce domain is required");
  const maxBytes = options.maxBytes ?? 1024 * 1024;
  const parse = options.parse ?? parseReport;

  /** The token for a VERP address, "" for fbl@, null for anything else. */
  const routeOf = (address: string): string | null => {
    const at = address.lastIndexOf("@");
    if (at <= 0) return null;
    const domain = address.slice(at + 1).toLowerCase();
    if (!domains.includes(domain)) return null;
    if (address.slice(0, at).toLowerCase() === "fbl") return "";
    return parseVerpAddress(address, domain);
  };

  // One peer may not hold the listener: sessions per peer, and no standing idle outside a transaction.
  const connectionOf = (sessionId: string) => [...server.connections].find((c) => c.id === sessionId);
  const guard = createSessionGuard(
    {
      maxPerPeer: options.maxClientsPerPeer ?? 10,
      idleBeforeMailMs: options.idleBeforeMailMs ?? 10_000,
      transactionMs: options.transactionMs ?? 10 * 60_000,
    },
    // send(421) closes the connection after the reply.
    (sessionId) => connectionOf(sessionId)?.send(421, "4.4.2 Idle too long without a message, closing connection", false),
    (sessionId) => Boolean(connectionOf(sessionId)?.session?.envelope?.mailFrom),
  );

  const server = new SMTPServer({
    name: options.name ?? domains[0]!,
    banner: "bounce and feedback intake",
    size: maxBytes,
    authOptional: true,
    disabledCommands: options.tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    maxClients: options.maxClients ?? 100,
    socketTimeout: options.socketTimeoutMs ?? 60_000,
    closeTimeout: 5000,
    logger: false,
    // No PTR lookup per connection: nothing here uses the client's host name, and it costs a DNS round trip.
    disableReverseLookup: true,
    onConnect(session, callback) {
      callback(guard.opened({ id: session.id, remoteAddress: session.remoteAddress }) ?? null);
    },
    onMailFrom(_address, session, callback) {
      guard.mailFrom(session.id);
      callback();
    },
    onClose(session) {
      guard.closed(session.id);
    },
    onRcptTo(address, session, callback) {
      if (routeOf(address.address) === null) {
        return callback(smtpError(550, "5.7.1 Relaying denied: this host only takes bounces and feedback reports"));
      }
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpError(452, "4.5.3 Too many recipients"));
      callback();
    },
    onData(stream, session, answer) {
      const callback: typeof answer = (err, message) => {
        guard.messageAnswered(session.id);
        answer(err, message);
      };
      collect(stream, maxBytes, (raw) => {
        if (stream.sizeExceeded || raw === "too_big") {
          return callback(smtpError(552, `5.3.4 Message exceeds the ${maxBytes}-byte limit for reports`));
        }
        if (raw === null) return callback(smtpError(451, "4.3.0 Message not received completely, try again later"));
        const routes = session.envelope.rcptTo.map((r) => routeOf(r.address)).filter((r): r is string => r !== null);
        handle(raw, routes).then(
          (answer) => callback(answer.error ?? null, answer.message),
          (err: unknown) => {
            logger.error({ err }, "inbound: report not stored; asking the sender to retry");
            callback(smtpError(451, "4.3.0 Temporary failure storing the report, try again later"));
          },
        );
      });
    },
  });
  server.on("error", (err) =>
    logger.warn({ err: { code: (err as NodeJS.ErrnoException).code, message: err.message } }, "inbound SMTP connection error"),
  );

  /** Parse one message and hand its reports over; rejects only when onReport does. */
  async function handle(raw: Buffer, routes: string[]): Promise<{ error?: Error; message?: string }> {
    const tokens = routes.filter((r) => r !== "");
    const parsed = await parse(raw);
    if (!parsed.ok) {
      logger.info({ tokens, reason: parsed.reason, bytes: raw.length }, "inbound: not a report; dropped");
      return { message: "2.0.0 Accepted (not a report; dropped)" };
    }
    const content = parsed.report;
    if (content.kind === "dsn") {
      if (tokens.length === 0) {
        logger.info({ reason: "DSN not addressed to a return path" }, "inbound: DSN dropped");
        return { message: "2.0.0 Accepted (no return path; dropped)" };
      }
      // A DSN is addressed to one copy's return path; several at once is odd but each is judged alone.
      for (const token of tokens) {
        logger.info(
          { token, kind: "dsn", recipients: content.recipients.length, actions: content.recipients.map((r) => r.action) },
          "inbound: DSN received",
        );
        await options.onReport({ ...content, token });
      }
      return { message: "2.0.0 Report accepted" };
    }
    const token = tokens[0] ?? null;
    logger.info(
      { token, kind: "arf", feedbackType: content.feedbackType, hasMessageId: content.originalMessageId !== null },
      "inbound: feedback report received",
    );
    await options.onReport({ ...content, token });
    return { message: "2.0.0 Report accepted" };
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.server.address() as AddressInfo;
  return {
    host: options.host,
    port: address.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function smtpError(code: number, text: string): Error {
  return Object.assign(new Error(text), { responseCode: code });
}

/** Read the message, keeping at most maxBytes (the excess is drained, not held); null when the stream failed. */
function collect(stream: SMTPServerDataStream, maxBytes: number, done: (raw: Buffer | "too_big" | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (raw: Buffer | "too_big" | null) => {
    if (finished) return;
    finished = true;
    done(raw);
  };
  stream.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size <= maxBytes) chunks.push(chunk);
  });
  // A burst of large reports is read a piece of each at a time, not each whole in one go.
  paceReading(stream);
  stream.once("end", () => finish(size <= maxBytes ? Buffer.concat(chunks, size) : "too_big"));
  stream.once("error", () => finish(null));
}
