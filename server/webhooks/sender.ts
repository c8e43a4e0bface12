/**
 * The HTTP side of a delivery: one POST with undici's keep-alive Pool (one per receiver origin;
 * Node's fetch costs several times the CPU per request), the SSRF guard on every
 * connection, no redirects followed (a 3xx is a non-2xx answer), one time limit over connect,
 * answer and body, and at most a small excerpt of the answer kept.
 */
import { performance } from "node:perf_hooks";
import { isIP } from "node:net";
import { Pool, buildConnector, errors as undiciErrors } from "undici";
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
  /** Injectable timers (tests). */
  timers?: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout };
}

/** Bytes of the answer read at most; the rest is discarded with the connection. */
const MAX_ANSWER_BYTES = 16 * 1024;

export function createSender(options: SenderOptions) {
  const { policy, timeoutMs, excerptChars = 1024 } = options;
  const timers = options.timers ?? { setTimeout, clearTimeout };
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
      pool = new Pool(origin, { connections: options.connections, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: guardedConnect });
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
        target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}`, host, refusal: isIP(host) ? policy.refusal(host) : null };
      } catch {
        target = null;
      }
      if (targets.size > 10_000) targets.clear();
      targets.set(url, target);
    }
    return targets.get(url)!;
  };

  async function send(url: string, headers: Record<string, string>, body: Buffer): Promise<SendResult> {
    const started = performance.now();
    const done = (r: Omit<SendResult, "durationMs">): SendResult => ({ ...r, durationMs: Math.max(0, Math.round(performance.now() - started)) });
    const target = targetOf(url);
    if (!target) return done({ statusCode: null, success: false, error: "connection_error", errorDetail: "invalid URL", excerpt: null });
    if (target.refusal) return done({ statusCode: null, success: false, error: "blocked_address", errorDetail: `${target.host} is ${target.refusal}`, excerpt: null });
    const abort = new AbortController();
    const timer = timers.setTimeout(() => abort.abort(), timeoutMs);
    try {
      const res = await poolFor(target.origin).request({
        path: target.path,
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "webhook-delivery/1", ...headers },
        body,
        signal: abort.signal,
      });
      const excerpt = await readExcerpt(res.body, excerptChars);
      const success = res.statusCode >= 200 && res.statusCode < 300;
      return done({ statusCode: res.statusCode, success, ...(success ? {} : { error: "non_2xx" as const }), excerpt });
    } catch (err) {
      return done({ statusCode: null, success: false, ...classify(err, abort.signal.aborted), excerpt: null });
    } finally {
      timers.clearTimeout(timer);
    }
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

/** Reads the answer up to MAX_ANSWER_BYTES (dropping the connection if it is longer) and keeps the first characters. */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }, chars: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_ANSWER_BYTES) {
      body.destroy();
      break;
    }
  }
  if (size === 0) return null;
  return Array.from(Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString("utf8")).slice(0, chars).join("");
}

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
