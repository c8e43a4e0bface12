/**
 * Shared by the test/email-mail-*.test.ts files: an in-process SMTP server on 127.0.0.1 that records
 * every transaction (envelope and raw bytes) and answers what the test asks for.
 */
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";

export interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** The session was under TLS (STARTTLS or implicit). */
  secure: boolean;
  /** The user name the client authenticated as, if it did. */
  user: string | undefined;
}

export interface CaptureServer {
  port: number;
  received: Received[];
  /** Resolves with the next message received (or one already received and not yet taken). */
  next(): Promise<Received>;
  close(): Promise<void>;
}

type Reject = { code: number; message: string } | null;

export interface CaptureOptions extends Partial<SMTPServerOptions> {
  /** Per-recipient answer at RCPT: null accepts. */
  rcpt?: (address: string) => Reject;
  /** Answer to the end of DATA: null accepts with 250. */
  data?: (message: Received) => Reject;
}

export async function startCaptureServer(options: CaptureOptions = {}): Promise<CaptureServer> {
  const { rcpt, data, ...serverOptions } = options;
  const received: Received[] = [];
  const waiters: Array<(m: Received) => void> = [];
  let taken = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    disableReverseLookup: true,
    ...serverOptions,
    onRcptTo(address, _session, cb) {
      const answer = rcpt?.(address.address) ?? null;
      if (!answer) return cb();
      cb(Object.assign(new Error(answer.message), { responseCode: answer.code }));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const message: Received = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          user: typeof session.user === "string" ? session.user : undefined,
        };
        const answer = data?.(message) ?? null;
        if (answer) return cb(Object.assign(new Error(answer.message), { responseCode: answer.code }));
        received.push(message);
        const waiter = waiters.shift();
        if (waiter) {
          taken++;
          waiter(message);
        }
        cb(null);
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    received,
    next() {
      if (taken < received.length) return Promise.resolve(received[taken++]!);
      return new Promise((resolve) => waiters.push(resolve));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The value of the first header `name` in a raw message (unfolded), or undefined. */
export function headerOf(raw: Buffer | string, name: string): string | undefined {
  const text = raw.toString("utf8");
  const end = text.search(/\r?\n\r?\n/);
  const head = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/**
 * A bare SMTP client over a socket, for what nodemailer will not do (it refuses to send a message
 * over the server's advertised SIZE). Sends each command, returns every reply line in order.
 */
export async function rawSmtp(port: number, commands: Array<string | Buffer>): Promise<string[]> {
  const { connect } = await import("node:net");
  const socket = connect(port, "127.0.0.1");
  const replies: string[] = [];
  let buffer = "";
  let waiting: (() => void) | null = null;
  socket.on("data", (chunk) => {
    buffer += chunk.toString("latin1");
    let i: number;
    while ((i = buffer.indexOf("\r\n")) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      if (/^\d{3} /.test(line)) {
        replies.push(line);
        const w = waiting;
        waiting = null;
        w?.();
      }
    }
  });
  const reply = () => new Promise<void>((resolve) => (waiting = resolve));
  await reply(); // greeting
  for (const command of commands) {
    const next = reply();
    socket.write(command);
    await next;
  }
  socket.end();
  return replies;
}
