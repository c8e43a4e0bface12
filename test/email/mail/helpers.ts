/**
 * Shared by the test/email/mail/*.test.ts files: an in-process SMTP server on 127.0.0.1 that records
 * every transaction (envelope and raw bytes) and answers what the test asks for, and the simulator
 * with the transports that send through it.
 */
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll } from "vitest";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import {
  composeCopy,
  newMessageId,
  newVerpToken,
  verpAddress,
  type CopyInput,
  type OutgoingCopy,
} from "../../../handlers/email/mail/compose.ts";
import { startSimulator, type Simulator } from "../../../handlers/email/mail/simulator.ts";
import { createTransports, type Transports } from "../../../handlers/email/mail/transport.ts";

const logger = pino({ level: "silent" });

/**
 * A receipt from Acme to `to`, composed as the service composes a copy: a new Message-ID and a VERP
 * return path (`token`, a new one unless given, under `bounceDomain`); `more` adds or replaces fields.
 */
export function receiptTo(to: string, o: { bounceDomain: string; token?: string; more?: Partial<CopyInput> }): OutgoingCopy {
  return composeCopy({
    from: "receipts@acme.test",
    fromName: "Acme",
    to,
    subject: "Your receipt",
    text: "Hello",
    messageId: newMessageId("acme.test"),
    returnPath: verpAddress(o.token ?? newVerpToken(), o.bounceDomain),
    ...o.more,
  });
}

export interface SimulatorTransports {
  simulator: Simulator;
  transports: Transports;
  /** Stops the transports, then the simulator. */
  close(): Promise<void>;
}

/**
 * The simulator, mailing its reports after `reportDelayMs` to the inbound listener on
 * 127.0.0.1:`inboundPort`, and transports that send through it (and through the sink, with `sink`).
 */
export async function startSimulatorTransports(
  inboundPort: number,
  o: { reportDelayMs: number; sink?: boolean },
): Promise<SimulatorTransports> {
  const simulator = await startSimulator({ inbound: { host: "127.0.0.1", port: inboundPort }, logger, reportDelayMs: o.reportDelayMs });
  const transports = createTransports({
    simulator: { host: simulator.host, port: simulator.port },
    ...(o.sink ? { sink: true } : {}),
    logger,
  });
  return {
    simulator,
    transports,
    close: async () => {
      await transports.close();
      await simulator.close();
    },
  };
}

/**
 * For the tests of one `describe`: a capture server standing in for the inbound listener, and the
 * simulator's transports mailing their reports to it (startSimulatorTransports), opened before the
 * first test and closed after the last. Its fields are read in tests.
 */
export function simulatorReportingToCapture(o: { reportDelayMs: number; sink?: boolean }): {
  readonly inbound: CaptureServer;
  readonly simulator: Simulator;
  readonly transports: Transports;
} {
  let inbound: CaptureServer | undefined;
  let simulated: SimulatorTransports | undefined;
  beforeAll(async () => {
    inbound = await startCaptureServer();
    simulated = await startSimulatorTransports(inbound.port, o);
  });
  afterAll(async () => {
    await simulated?.close();
    await inbound?.close();
  });
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the simulator and its capture server open before the first test");
    return value;
  };
  return {
    get inbound() {
      return opened(inbound);
    },
    get simulator() {
      return opened(simulated).simulator;
    },
    get transports() {
      return opened(simulated).transports;
    },
  };
}

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
