/**
 * Prometheus metrics (prom-client) of one service, served at its `/metrics` (X-API-11).
 *
 * Each service gets its own registry, so that the three services `npm start` runs in one process
 * do not share counters; Node's process metrics (CPU, memory, event loop lag, GC) are collected once
 * per process and shown by every service of it. The domain never sees prom-client: it gets small
 * recorders (`attempt(outcome)`, `grant(type, outcome)`) from the service's assembly. What a
 * service counts of its own (identity's grants, email's sends) it defines in its `metrics.ts` from
 * `outcomeCounter` and `queueGauges`, with label sets from its own code.
 *
 * Labels are bounded: operations by operationId (never the raw path), every unmatched request as
 * one `unknown`, outcomes from closed lists.
 */
import { performance } from "node:perf_hooks";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Clock } from "../clock.ts";

/** The `operation` label of a request that matched no operation (unknown path, wrong method). */
export const UNKNOWN_OPERATION = "unknown";

/** How long a queue read is reused: scrapes (several Prometheus servers, a curl loop) cost the database at most one read per this. */
export const QUEUE_READ_CACHE_MS = 5000;

/** A queue as its gauges see it: pending items, and the earliest time one of them is due. */
export interface QueueSummary {
  depth: number;
  /** ISO 8601; null when nothing is pending. */
  earliestDueAt: string | null;
}

export interface ServiceMetrics {
  readonly registry: Registry;
  /** The exposition format's media type (`text/plain; version=0.0.4`). */
  readonly contentType: string;
  /** The process's and this service's metrics, in the exposition format. */
  exposition(): Promise<string>;
  /** One answered HTTP request. */
  observeRequest(operation: string, status: number, seconds: number): void;
}

let processRegistry: Registry | undefined;

/** Node's default metrics, registered once per process whatever the number of services in it. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export function createServiceMetrics(): ServiceMetrics {
  const registry = new Registry();
  const shared = processMetrics();
  const labelNames = ["operation", "status"] as const;
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by operationId (unknown: no operation matched) and status code.",
    labelNames,
    registers: [registry],
  });
  const durations = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from the request's arrival to its answer, by operationId and status code.",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    registry,
    contentType: registry.contentType,
    async exposition() {
      return (await shared.metrics()) + (await registry.metrics());
    },
    observeRequest(operation, status, seconds) {
      const labels = { operation, status: String(status) };
      requests.inc(labels);
      durations.observe(labels, seconds);
    },
  };
}

/**
 * A counter of outcomes from a closed list, optionally by one more closed label; any other value
 * is counted as `other`, so an unexpected value cannot grow the label set. The expected series
 * start at zero, so rate() and absent-series alerts work before the first event.
 */
export function outcomeCounter(
  metrics: ServiceMetrics,
  name: string,
  help: string,
  outcomes: readonly string[],
  by?: { label: string; values: readonly string[] },
) {
  const counter = new Counter({ name, help, labelNames: by ? [by.label, "outcome"] : ["outcome"], registers: [metrics.registry] });
  const known = new Set(outcomes);
  const knownBy = new Set(by?.values);
  for (const outcome of outcomes)
    for (const value of by?.values ?? [undefined]) counter.inc(by ? { [by.label]: value!, outcome } : { outcome }, 0);
  return (outcome: string, byValue = "") => {
    const o = known.has(outcome) ? outcome : "other";
    counter.inc(by ? { [by.label]: knownBy.has(byValue) ? byValue : "other", outcome: o } : { outcome: o });
  };
}

/**
 * Gauges of a queue, read on scrape: depth, and how late its most overdue item is. One read feeds
 * both, reused for QUEUE_READ_CACHE_MS (monotonic time), and concurrent scrapes share it. A failed
 * read keeps the last values (the health probes report the database).
 */
export function queueGauges(
  metrics: ServiceMetrics,
  prefix: string,
  help: { depth: string; age: string },
  read: () => Promise<QueueSummary>,
  clock: Clock,
  cacheMs: number,
): void {
  let cached: { at: number; value: Promise<QueueSummary> } | undefined;
  let last: QueueSummary = { depth: 0, earliestDueAt: null };
  const current = (): Promise<QueueSummary> => {
    const now = performance.now();
    if (!cached || now - cached.at >= cacheMs) {
      const value = read().then(
        (v) => (last = v),
        () => last,
      );
      cached = { at: now, value };
    }
    return cached.value;
  };
  new Gauge({
    name: `${prefix}_queue_depth`,
    help: help.depth,
    registers: [metrics.registry],
    async collect() {
      this.set((await current()).depth);
    },
  });
  new Gauge({
    name: `${prefix}_oldest_pending_age_seconds`,
    help: help.age,
    registers: [metrics.registry],
    async collect() {
      const due = (await current()).earliestDueAt;
      this.set(due ? Math.max(0, (clock.now().getTime() - Date.parse(due)) / 1000) : 0);
    },
  });
}

/** Outcomes of a webhook attempt: `success` or the engine's AttemptError. */
export const WEBHOOK_OUTCOMES = ["success", "non_2xx", "timeout", "connection_error", "blocked_address"] as const;

/** Webhook delivery metrics (server/webhooks' engine, in each service that delivers webhooks): attempts by outcome, queue depth and lateness. */
export function webhookMetrics(metrics: ServiceMetrics, read: () => Promise<QueueSummary>, clock: Clock, cacheMs = QUEUE_READ_CACHE_MS) {
  const count = outcomeCounter(
    metrics,
    "webhook_attempts_total",
    "Webhook delivery attempts, by outcome (success, non_2xx, timeout, connection_error, blocked_address).",
    WEBHOOK_OUTCOMES,
  );
  queueGauges(
    metrics,
    "webhook",
    {
      depth: "Webhook deliveries pending: due, in flight, or waiting for a scheduled retry.",
      age: "Seconds since the most overdue pending webhook delivery became due (0 when none is due: a delivery waiting for its scheduled retry is not late).",
    },
    read,
    clock,
    cacheMs,
  );
  return { attempt: (outcome: string) => count(outcome) };
}

export type AttemptRecorder = { attempt(outcome: string): void };
