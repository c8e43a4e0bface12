/**
 * The HTTP side of a delivery: one POST with undici's keep-alive Pool (one per receiver origin;
 * Node's fetch costs several times the CPU per request), the SSRF guard on every
 * connection, no redirects followed (a 3xx is a non-2xx answer), one time limit over connect,
 * answer and body, and at most a small excerpt of the answer kept.
 */
import { performance } from "node:perf_hooks";
import { isIP } from "node:net";
import { Pool, buildConnector, errors as undiciErrors, type Dispatcher } from "undici";
import { systemClock, type Timer, type Timers } from "../clock.ts";
import { BlockedAddressError, guardedLookup, type AddressPolicy } from "./ssrf.ts";

export type AttemptError = "timeout" | "connection_error" | "non_2xx" | "blocked_address";

export interface SendResult {
  /** The receiver's status, or null when there was no answer. */
  statusCode: number | null;
  success: boolean;
  error?: AttemptError;
  /** For logs and diagnostics only (never shown to API clients verbatim). */
  errorDetail?: string;
  /** At most `excerptChars` characters of the answer body. */
  excerpt: string | null;
  durationMs: number;
}

export interface SenderOptions {
  policy: AddressPolicy;
  timeoutMs: number;
  /** Connections per receiver origin. */
  connections: number;
  excerptChars?: number;
  /** The clock the time limit runs on (the engine's); default the system clock. */
  timers?: Timers;
}

/** Bytes of the answer read at most; the rest is discarded with the connection. */
const MAX_ANSWER_BYTES = 16 * 1024;

export function createSender(options: SenderOptions) {
  const { policy, timeoutMs, excerptChars = 1024 } = options;
  const timers = options.timers ?? systemClock;
  const connect = buildConnector({ lookup: guardedLookup(policy), timeout: timeoutMs } as never);
  // The address actually connected to is checked too: IP literals skip `lookup`.
  const guardedConnect: buildConnector.connector = (opts, callback) =>
    connect(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error("no socket"), null);
      const address = socket.remoteAddress ?? "";
      const refusal = policy.refusal(address);
      if (refusal) {
        socket.destroy();
        return callback(new BlockedAddressError(`connected to ${address}, ${refusal}`), null);
      }
      callback(null, socket);
    });
  // One keep-alive pool per receiver origin (what undici's Agent does, without its per-request
  // URL handling), and parsed targets cached by URL string.
  const pools = new Map<string, Pool>();
  type Target = { origin: string; path: string; host: string; refusal: string | null };
  const targets = new Map<string, Target | null>();
  const poolFor = (origin: string) => {
    let pool = pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: options.connections,
        keepAliveTimeout: 30_000,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        connect: guardedConnect,
      });
      pools.set(origin, pool);
    }
    return pool;
  };
  const targetOf = (url: string) => {
    if (!targets.has(url)) {
      let target: Target | null = null;
      try {
        const parsed = new URL(url);
        const host = parsed.hostname.replace(/^\[|\]$/g, "");
        // An IP literal is refused before connecting (its `lookup` never runs).
        target = {
          origin: parsed.origin,
          path: `${parsed.pathname}${parsed.search}`,
          host,
          refusal: isIP(host) ? policy.refusal(host) : null,
        };
      } catch {
        target = null;
      }
      if (targets.size > 10_000) targets.clear();
      targets.set(url, target);
    }
    return targets.get(url)!;
  };

  function send(url: string, headers: Record<string, string>, body: Buffer): Promise<SendResult> {
    const target = targetOf(url);
    if (!target)
      return Promise.resolve(
        withDuration(performance.now(), {
          statusCode: null,
          success: false,
          error: "connection_error",
          errorDetail: "invalid URL",
          excerpt: null,
        }),
      );
    if (target.refusal)
      return Promise.resolve(
        withDuration(performance.now(), {
          statusCode: null,
          success: false,
          error: "blocked_address",
          errorDetail: `${target.host} is ${target.refusal}`,
          excerpt: null,
        }),
      );
    return new Promise((resolve) => {
      const handler = new Attempt(resolve, excerptChars, timers, timeoutMs);
      // undici's low-level dispatch: `request()` costs a readable stream, an AbortSignal and parsed
      // headers per call, a good part of an attempt's CPU, for an answer only glanced at.
      poolFor(target.origin).dispatch(
        {
          path: target.path,
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": "webhook-delivery/1", ...headers },
          body,
        },
        handler,
      );
    });
  }

  return {
    send,
    /** Lets open requests finish, then closes the pools. */
    close: async () => void (await Promise.all([...pools.values()].map((p) => p.close()))),
    /** Aborts everything at once. */
    destroy: async () => void (await Promise.all([...pools.values()].map((p) => p.destroy()))),
  };
}

export type Sender = ReturnType<typeof createSender>;

const withDuration = (started: number, r: Omit<SendResult, "durationMs">): SendResult => ({
  ...r,
  durationMs: Math.max(0, Math.round(performance.now() - started)),
});

/**
 * One POST as an undici dispatch handler: keeps the status and at most MAX_ANSWER_BYTES of the
 * answer (dropping the connection if it is longer), and enforces one time limit over the whole
 * attempt, from queueing for a connection to the last byte of the answer.
 */
class Attempt implements Dispatcher.DispatchHandler {
  private readonly started = performance.now();
  private readonly timer: Timer;
  private abort: ((err: Error) => void) | undefined;
  private timedOut = false;
  private settled = false;
  private statusCode = 0;
  private chunks: Buffer[] = [];
  private size = 0;

  private readonly resolve: (r: SendResult) => void;
  private readonly excerptChars: number;
  private readonly timers: Timers;

  constructor(resolve: (r: SendResult) => void, excerptChars: number, timers: Timers, timeoutMs: number) {
    this.resolve = resolve;
    this.excerptChars = excerptChars;
    this.timers = timers;
    this.timer = timers.setTimeout(() => this.expire(), timeoutMs);
  }

  private expire(): void {
    this.timedOut = true;
    // Not yet connected: undici hands over its controller when it is, and onRequestStart aborts at once.
    this.abort?.(new Error("no complete answer within the time limit"));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.abort = (err) => controller.abort(err);
    if (this.timedOut) controller.abort(new Error("no complete answer within the time limit"));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.statusCode = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    // Enough read: the rest is discarded with the connection (the answer still counts).
    if (this.size >= MAX_ANSWER_BYTES) controller.abort(new AnswerTooLong());
  }

  onResponseEnd(): void {
    this.answered();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (err instanceof AnswerTooLong && !this.timedOut) {
      this.answered();
      return;
    }
    this.finish({ statusCode: null, success: false, ...classify(err, this.timedOut), excerpt: null });
  }

  private answered(): void {
    const success = this.statusCode >= 200 && this.statusCode < 300;
    this.finish({ statusCode: this.statusCode, success, ...(success ? {} : { error: "non_2xx" as const }), excerpt: this.excerpt() });
  }

  private excerpt(): string | null {
    if (this.size === 0) return null;
    const text = (this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)).subarray(0, MAX_ANSWER_BYTES).toString("utf8");
    return text.length <= this.excerptChars ? text : Array.from(text).slice(0, this.excerptChars).join("");
  }

  private finish(r: Omit<SendResult, "durationMs">): void {
    if (this.settled) return;
    this.settled = true;
    this.timers.clearTimeout(this.timer);
    this.resolve(withDuration(this.started, r));
  }
}

/** Raised by the handler itself to stop reading a long answer. */
class AnswerTooLong extends Error {}

function classify(err: unknown, aborted: boolean): { error: AttemptError; errorDetail: string } {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof BlockedAddressError || (e as { code?: string }).code === "ERR_WEBHOOK_BLOCKED_ADDRESS") {
      return { error: "blocked_address", errorDetail: (e as Error).message };
    }
  }
  const detail = err instanceof Error ? `${(err as { code?: string }).code ?? err.name}: ${err.message}` : String(err);
  if (
    aborted ||
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError
  ) {
    return { error: "timeout", errorDetail: detail };
  }
  return { error: "connection_error", errorDetail: detail };
}
