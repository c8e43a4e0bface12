/**
 * The outbound dispatcher: claims due copies under a lease (the same protocol as the webhook
 * engine: a copy whose holder died is claimed again when its lease runs out), hands each to its
 * transport, one SMTP transaction per copy, and applies the answer (X-EM status table): 2xx
 * delivered, 5xx bounced (hard or soft), 4xx and connection failures retried on the schedule, then
 * a soft bounce (the receiving server kept deferring) or `Failed` (the relay never took it).
 *
 * At least once towards the relay: a crash between the relay's 250 and the COMMIT of the outcome
 * sends that copy again after the lease; never zero times.
 */
import { randomUUID } from "node:crypto";
import { savepoint, type Transactor, type Tx } from "../../../server/storage/transaction.ts";
import type { Logger } from "pino";
import type { Clock } from "../../../server/clock.ts";
import type { SmtpOutcome } from "../mail/reply.ts";
import type { OutgoingCopy } from "../mail/compose.ts";
import type { MessageStore, RecipientRow, Transport } from "../storage/messages.ts";
import type { Outcomes } from "./outcomes.ts";
import type { Suppressions } from "./suppressions.ts";

/** Delays after failed attempt 1, 2, …: 8 attempts over about 7 h 51 min (X-EM-16). */
export const DEFAULT_RETRY_DELAYS_MS = [60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000];

/** How long answers wait for others before their batch commits (see "Recording answers"). */
const GATHER_MS = 20;

export interface OutboundOptions {
  /** Opens the service's transactions (the plain transactor of its database). */
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  queries: MessageStore;
  outcomes: Outcomes;
  suppressions: Suppressions;
  /**
   * Builds a copy's MIME input from its rows (the message's content, tracking, VERP) and runs `use`
   * with it: what the copies of one message share stays held while one of them is being sent.
   */
  compose<T>(recipient: RecipientRow, use: (copy: OutgoingCopy) => Promise<T>): Promise<T>;
  send(transport: Transport, copy: OutgoingCopy): Promise<SmtpOutcome>;
  concurrency: number;
  leaseMs: number;
  pollIntervalMs: number;
  retryDelaysMs?: readonly number[];
  /** Told the outcome of every send (metrics): the SMTP answer's meaning, or `error` when the attempt failed on our side. */
  onAttempt?: (outcome: SmtpOutcome["kind"] | "error") => void;
}

export function createOutbound(options: OutboundOptions) {
  const { transaction, clock, queries, outcomes, suppressions, concurrency } = options;
  const log = options.logger.child({ component: "outbound" });
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const maxAttempts = delays.length + 1;
  const inFlight = new Set<Promise<void>>();
  /** Attempts whose answer has not come yet. */
  let sending = 0;
  /** Answers that end the gathering at once: half the slots. */
  const gatherMax = Math.max(1, Math.floor(concurrency / 2));
  let running = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;

  const iso = (ms: number) => new Date(ms).toISOString();

  async function claim(limit: number): Promise<Array<RecipientRow & { lease_token: string }>> {
    const now = clock.now().getTime();
    const token = randomUUID();
    const rows = await queries.claimDue(iso(now), token, iso(now + options.leaseMs), limit);
    return rows.map((r) => ({ ...r, lease_token: token }));
  }

  /** One attempt of one claimed copy, start to recorded outcome. Never throws. */
  async function attempt(copy: RecipientRow & { lease_token: string }): Promise<void> {
    sending++;
    let waiting = true;
    /** This attempt's answer is in (or it has none): once no answer is on its way, the gathered ones need not wait. */
    const answered = () => {
      if (!waiting) return;
      waiting = false;
      if (--sending === 0) gathered?.();
    };
    try {
      const startedAt = clock.now().toISOString();
      // Suppressed since it was accepted (a complaint about an earlier message, say): never sent.
      // The list of the message's mode (X-EM-27), read with it in one statement.
      const suppressed = await suppressions.ofCopy(copy);
      if (suppressed) {
        await transaction((trx) =>
          outcomes.apply(
            trx,
            copy.id,
            { kind: "suppressed", errorMessage: `The recipient was suppressed (${suppressed.reason}) after the message was accepted.` },
            { leaseToken: copy.lease_token },
          ),
        );
        return;
      }
      const answer = await options.compose(copy, (outgoing) => options.send(copy.transport, outgoing));
      options.onAttempt?.(answer.kind);
      // The slot stays taken until the outcome is committed: copies sent but not recorded, the ones a
      // crash sends twice, stay within the concurrency.
      const recorded = commitOutcome({ copy, answer, attempts: Number(copy.attempts) + 1, startedAt });
      answered();
      await recorded;
    } catch (err) {
      // A bug or a database failure: the lease runs out and another attempt picks the copy up.
      options.onAttempt?.("error");
      log.error({ err, recipientId: copy.id }, "outbound attempt failed unexpectedly");
    } finally {
      answered();
    }
  }

  // --- Recording answers: group commit, so a busy dispatcher pays one COMMIT (one fsync) per batch
  // of answers instead of one per copy. Answers gather for up to GATHER_MS, until half the slots
  // hold one or no other send is in flight: on SQLite a COMMIT is an fsync on the event loop (about
  // 1 ms on the benchmark's VM), and committing each round of answers as it came cost one COMMIT
  // per two or three copies. The other half of the slots keep the relay's connections fed
  // meanwhile (they send or queue for them). Each answer is written in a savepoint of its own, so a
  // failing one is undone alone; its copy stays leased and is sent again after the lease (at least
  // once). A caller is answered only after the COMMIT that holds its outcome. ---
  interface OutcomeWrite {
    copy: RecipientRow & { lease_token: string };
    answer: SmtpOutcome;
    attempts: number;
    startedAt: string;
  }
  let writes: Array<{ write: OutcomeWrite; done: () => void }> = [];
  let flushing: Promise<void> | undefined;
  /** Ends the current gathering at once. */
  let gathered: (() => void) | undefined;

  function commitOutcome(write: OutcomeWrite): Promise<void> {
    return new Promise<void>((done) => {
      writes.push({ write, done });
      if (!flushing) flushing = flushLoop();
      else if (writes.length >= gatherMax) gathered?.();
    });
  }

  function gather(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(end, GATHER_MS);
      function end() {
        clearTimeout(timer);
        gathered = undefined;
        resolve();
      }
      gathered = end;
    });
  }

  async function flushLoop(): Promise<void> {
    while (writes.length) {
      if (writes.length < gatherMax && sending > 0) await gather();
      // In message order: each answer locks its message's row (the derived status), and two
      // instances taking those locks in different orders deadlock on PostgreSQL.
      const batch = writes.sort((a, b) =>
        a.write.copy.email_id < b.write.copy.email_id ? -1 : a.write.copy.email_id > b.write.copy.email_id ? 1 : 0,
      );
      writes = [];
      try {
        await transaction(async (trx) => {
          for (const { write } of batch) {
            try {
              await savepoint(trx, async (sp) => {
                await queries.insertTimeline([outcomes.timeline(write.copy, "email.sent", write.startedAt, {})], sp);
                await record(sp, write.copy, write.answer, write.attempts);
              });
            } catch (err) {
              log.error({ err, recipientId: write.copy.id }, "recording an answer failed; the copy is sent again after its lease");
            }
          }
        });
      } catch (err) {
        log.error({ err, copies: batch.length }, "committing answers failed; the copies are sent again after their leases");
      }
      for (const { done } of batch) done();
    }
    flushing = undefined;
  }

  async function record(trx: Tx, copy: RecipientRow & { lease_token: string }, answer: SmtpOutcome, attempts: number): Promise<void> {
    const lease = { leaseToken: copy.lease_token, attempts };
    const reply = { smtpResponse: answer.smtpResponse, smtpStatus: answer.smtpStatus };
    switch (answer.kind) {
      case "delivered":
        await outcomes.apply(trx, copy.id, { kind: "delivered", ...reply }, lease);
        return;
      case "hard_bounce":
      case "soft_bounce":
        await outcomes.apply(
          trx,
          copy.id,
          { kind: "bounced", bounceType: answer.kind === "hard_bounce" ? "hard" : "soft", errorMessage: answer.smtpResponse, ...reply },
          lease,
        );
        return;
      case "retry":
      case "relay_failure": {
        if (attempts >= maxAttempts) {
          const change =
            answer.kind === "retry"
              ? ({ kind: "bounced", bounceType: "soft", errorMessage: answer.smtpResponse, ...reply } as const)
              : ({ kind: "failed", errorMessage: answer.smtpResponse, smtpResponse: answer.smtpResponse } as const);
          await outcomes.apply(trx, copy.id, change, lease);
          return;
        }
        const next = iso(clock.now().getTime() + delays[attempts - 1]!);
        const still = await queries.updateLeased(
          copy.id,
          copy.lease_token,
          {
            status: "Queued",
            attempts,
            next_attempt_at: next,
            lease_token: null,
            lease_expires_at: null,
            smtp_response: answer.smtpResponse,
            smtp_status: answer.smtpStatus,
            updated_at: clock.now().toISOString(),
          },
          trx,
        );
        if (still)
          await outcomes.note(trx, copy, "email.deferred", {
            errorMessage: answer.smtpResponse,
            ...(answer.smtpStatus ? { smtpStatus: answer.smtpStatus } : {}),
          });
        return;
      }
    }
  }

  function track(p: Promise<void>): void {
    inFlight.add(p);
    void p.finally(() => {
      inFlight.delete(p);
      wake();
    });
  }

  async function dispatchLoop(): Promise<void> {
    while (running) {
      const free = concurrency - inFlight.size;
      let claimed = 0;
      // Claim in batches, once half the slots are free: one claim per half-round of sends rather
      // than one per finished send (each claim is a write, and on SQLite a COMMIT).
      if (free >= Math.max(1, Math.floor(concurrency / 2))) {
        // The claim counts as in flight too: `dispatchDue` must not find the copies leased but untracked.
        const claiming = claim(free).then(
          (batch) => {
            for (const c of batch) track(attempt(c));
            return batch.length;
          },
          (err) => {
            log.error({ err }, "claiming due copies failed");
            return 0;
          },
        );
        const held = claiming.then(() => {});
        inFlight.add(held);
        void held.finally(() => inFlight.delete(held));
        claimed = await claiming;
      }
      if (claimed > 0 && claimed === free) continue;
      await sleep(options.pollIntervalMs);
    }
  }

  function sleep(ms: number): Promise<void> {
    if (woken) {
      woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        woken = false;
        resolve();
      }
      wakeUp = done;
    });
  }

  function wake(): void {
    if (wakeUp) wakeUp();
    else woken = true;
  }

  return {
    /** Wakes the dispatcher: copies were committed. */
    wake,

    /** Runs every copy due now, and what becomes due through them, to its outcome (tests and tools). */
    async dispatchDue(): Promise<number> {
      let total = 0;
      for (;;) {
        while (inFlight.size) await Promise.all([...inFlight]);
        const batch = await claim(Math.max(1, concurrency));
        if (!batch.length) break;
        total += batch.length;
        await Promise.all(batch.map(attempt));
      }
      return total;
    },

    start(): void {
      if (running) return;
      running = true;
      loop = dispatchLoop();
    },

    /** Claims nothing more and lets attempts in flight finish (their transports time out on their own). */
    async stop(): Promise<void> {
      if (!running) return;
      running = false;
      wake();
      await loop;
      await Promise.all([...inFlight]);
    },
  };
}

export type Outbound = ReturnType<typeof createOutbound>;
