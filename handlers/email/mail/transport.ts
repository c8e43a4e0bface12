/**
 * The transports a copy can go through (design M1), each recipient's copy through exactly one:
 *
 *   simulator  the in-process simulator (simulator.ts), over real SMTP through nodemailer: the same
 *              code path as a relay, so tests exercise the product path
 *   smtp       the deployment's relay, `EMAIL_SMTP_URL` (`smtp://user:pass@host:587`, `smtps://…:465`;
 *              STARTTLS whenever offered, required with `?requireTLS=true`)
 *   sink       answers 250 without any I/O; only when chosen explicitly (`EMAIL_TRANSPORT=sink`)
 *
 * SMTP transports are nodemailer pools: connections stay open across copies (a new connection costs
 * a TCP and often a TLS handshake, and a server may hold back its greeting). Each
 * copy is its own transaction with one RCPT, so the answer belongs to exactly one recipient.
 * `send` never rejects: every result, including "could not connect", is an `SmtpOutcome`.
 */
import { isIP } from "node:net";
import { createTransport, type Transporter } from "nodemailer";
import type { SMTPPoolOptions } from "nodemailer/lib/smtp-pool";
import type { Logger } from "pino";
import type { OutgoingCopy } from "./compose.ts";
import { dkimOptions, type DkimConfig } from "./dkim.ts";
import { classifySendError, classifySendInfo, type SmtpOutcome } from "./reply.ts";
import { SIMULATOR_DOMAIN } from "./simulator.ts";

export type TransportName = "simulator" | "smtp" | "sink";

/** Which transport a recipient's copy takes, or `no_transport` (the API answers 422, nothing stored). */
export function transportFor(
  recipient: string,
  context: { testKey: boolean; relayConfigured: boolean; sink: boolean },
): TransportName | "no_transport" {
  // Test keys never reach a relay, whatever the domain (Postmark's test token); simulator.test never does either.
  if (context.testKey || isSimulatorAddress(recipient)) return "simulator";
  if (context.sink) return "sink";
  if (context.relayConfigured) return "smtp";
  return "no_transport";
}

/** Is the address at the simulator's domain (`anything@simulator.test`, any case)? */
export function isSimulatorAddress(address: string): boolean {
  const at = address.lastIndexOf("@");
  return at > 0 && address.slice(at + 1).toLowerCase() === SIMULATOR_DOMAIN;
}

/** What a relay URL says, without its password in any error message. */
export interface RelayEndpoint {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (`smtps://`, port 465). */
  secure: boolean;
  /** Refuse to send unless STARTTLS succeeds (`?requireTLS=true`). */
  requireTLS: boolean;
  auth?: { user: string; pass: string };
}

/** Parse `smtp[s]://[user[:pass]@]host[:port][?requireTLS=true]`. Throws a `TypeError` that never quotes the password. */
export function parseRelayUrl(value: string): RelayEndpoint {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError("EMAIL_SMTP_URL is not a URL (expected smtp://user:pass@host:587 or smtps://…:465)");
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") throw new TypeError("EMAIL_SMTP_URL must start with smtp:// or smtps://");
  if (!url.hostname) throw new TypeError("EMAIL_SMTP_URL has no host");
  const secure = url.protocol === "smtps:";
  const requireTLSParam = url.searchParams.get("requireTLS");
  if (requireTLSParam !== null && requireTLSParam !== "true" && requireTLSParam !== "false") {
    throw new TypeError("EMAIL_SMTP_URL: requireTLS must be true or false");
  }
  for (const key of url.searchParams.keys()) {
    if (key !== "requireTLS") throw new TypeError(`EMAIL_SMTP_URL: unknown parameter ${JSON.stringify(key)}`);
  }
  const endpoint: RelayEndpoint = {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    requireTLS: requireTLSParam === "true",
  };
  if (url.username) endpoint.auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  return endpoint;
}

export interface PoolOptions {
  /** Connections kept open at once (nodemailer default 5). */
  maxConnections?: number;
  /** Messages per connection before it is recycled (default 100 for a relay, unlimited for the simulator). */
  maxMessages?: number;
}

export interface TransportsOptions {
  /** `EMAIL_SMTP_URL`; without it `smtp` answers relay_failure. */
  relayUrl?: string | undefined;
  /** `EMAIL_TRANSPORT=sink`: the sink is enabled; otherwise `sink` answers relay_failure. */
  sink?: boolean | undefined;
  simulator: { host: string; port: number };
  /** Sign every copy sent over SMTP (relay and simulator) with this key. */
  dkim?: DkimConfig | null | undefined;
  /** Host name we announce in EHLO (default: the machine's host name, as nodemailer does). */
  heloName?: string | undefined;
  relayPool?: PoolOptions | undefined;
  simulatorPool?: PoolOptions | undefined;
  /** TLS towards the relay: a private CA, or (development only) no certificate check. */
  relayTls?: { ca?: string | Buffer | undefined; rejectUnauthorized?: boolean | undefined } | undefined;
  /** Time limits towards the relay, ms (defaults: connect 30 s, greeting 30 s, idle socket 60 s). */
  timeouts?: { connectionMs?: number; greetingMs?: number; socketMs?: number } | undefined;
  logger?: Logger | undefined;
}

export interface Transports {
  /** Send one copy through one transport. Never rejects. */
  send(transport: TransportName, copy: OutgoingCopy): Promise<SmtpOutcome>;
  /** Connect and authenticate to the relay without sending: for start-up checks and the admin command. */
  verifyRelay(): Promise<SmtpOutcome>;
  /** Whether `smtp` has a relay behind it. */
  readonly relayConfigured: boolean;
  /** Waits for sends in flight, then closes every pooled connection. */
  close(): Promise<void>;
}

const SINK_RESPONSE = "250 2.0.0 Accepted by the sink (not delivered)";

/** Create the transports of a deployment. Throws on a bad relay URL (message without the password). */
export function createTransports(options: TransportsOptions): Transports {
  const relayEndpoint = options.relayUrl ? parseRelayUrl(options.relayUrl) : null;
  const dkim = options.dkim ? dkimOptions(options.dkim) : undefined;
  const timeouts = options.timeouts ?? {};
  const common = {
    pool: true as const,
    ...(options.heloName ? { name: options.heloName } : {}),
    ...(dkim ? { dkim } : {}),
    // Message content never comes from a file or URL (compose.ts sets the same on each message).
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false,
  };

  const simulatorOptions: SMTPPoolOptions & { pool: true } = {
    ...common,
    host: options.simulator.host,
    port: options.simulator.port,
    secure: false,
    ignoreTLS: true, // the simulator is on loopback and speaks no TLS
    maxConnections: options.simulatorPool?.maxConnections ?? 5,
    maxMessages: options.simulatorPool?.maxMessages ?? Infinity,
    connectionTimeout: 5000,
    greetingTimeout: 5000,
    socketTimeout: 30_000,
  };
  const simulator = createTransport(simulatorOptions);

  let relay: Transporter | null = null;
  if (relayEndpoint) {
    const relayOptions: SMTPPoolOptions & { pool: true } = {
      ...common,
      host: relayEndpoint.host,
      port: relayEndpoint.port,
      secure: relayEndpoint.secure,
      requireTLS: relayEndpoint.requireTLS,
      ...(relayEndpoint.auth ? { auth: relayEndpoint.auth } : {}),
      maxConnections: options.relayPool?.maxConnections ?? 5,
      maxMessages: options.relayPool?.maxMessages ?? 100,
      connectionTimeout: timeouts.connectionMs ?? 30_000,
      greetingTimeout: timeouts.greetingMs ?? 30_000,
      socketTimeout: timeouts.socketMs ?? 60_000,
      tls: {
        // SNI carries host names only (RFC 6066 §3); a relay given by IP address gets none.
        ...(isIP(relayEndpoint.host) ? {} : { servername: relayEndpoint.host }),
        ...(options.relayTls?.ca ? { ca: options.relayTls.ca } : {}),
        ...(options.relayTls?.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
      },
    };
    relay = createTransport(relayOptions);
  }

  // One pair of handlers for every send (no closure per copy); the counter lets close() drain.
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const settle = () => {
    if (--inFlight === 0 && drained) drained();
  };
  const onSent = (info: { response?: string }): SmtpOutcome => {
    settle();
    return classifySendInfo(info);
  };
  const onFailed = (err: unknown): SmtpOutcome => {
    settle();
    const outcome = classifySendError(err);
    if (outcome.kind === "relay_failure") {
      const e = err as { code?: string; command?: string };
      options.logger?.warn({ code: e.code, command: e.command }, "email transport: no answer from the SMTP server");
    }
    return outcome;
  };

  const sendThrough = (transporter: Transporter, copy: OutgoingCopy): Promise<SmtpOutcome> => {
    inFlight++;
    return transporter.sendMail(copy.mail).then(onSent, onFailed);
  };

  return {
    relayConfigured: relay !== null,
    send(transport, copy) {
      switch (transport) {
        case "simulator":
          return sendThrough(simulator, copy);
        case "smtp":
          if (!relay)
            return Promise.resolve({ kind: "relay_failure", smtpResponse: "no relay configured (EMAIL_SMTP_URL)", smtpStatus: null });
          return sendThrough(relay, copy);
        case "sink":
          if (!options.sink)
            return Promise.resolve({ kind: "relay_failure", smtpResponse: "the sink transport is not enabled", smtpStatus: null });
          return Promise.resolve({ kind: "delivered", smtpResponse: SINK_RESPONSE, smtpStatus: "2.0.0" });
      }
    },
    async verifyRelay() {
      if (!relay) return { kind: "relay_failure", smtpResponse: "no relay configured (EMAIL_SMTP_URL)", smtpStatus: null };
      try {
        await relay.verify();
        return { kind: "delivered", smtpResponse: "relay reachable", smtpStatus: null };
      } catch (err) {
        return classifySendError(err);
      }
    },
    async close() {
      if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
      simulator.close();
      relay?.close();
    },
  };
}
