/**
 * Email benchmark, on demand (never in `npm test`):
 *
 *   acceptance   POST /v1/emails at BENCH_CONNECTIONS (50) connections: messages accepted per second,
 *                p50 and p99 latency (figures: the latency target is the open-loop benchmark's), while the dispatcher delivers them
 *   end-to-end   BENCH_MESSAGES messages from the first POST to the last one received by an SMTP sink
 *                through the real path (API -> outbox -> nodemailer pool -> relay), against the
 *                ceiling measured in the same run: nodemailer's pooled transport alone sending the
 *                same message to the same sink with the same pool (target >= 0.75x)
 *
 *   npm run bench:email
 *   BENCH_MESSAGES=2000 BENCH_ROUNDS=2 npm run bench:email
 *   BENCH_DATABASE_URL=postgres://… npm run bench:email        # the service on PostgreSQL
 *   BENCH_PROFILE=.tmp/prof npm run bench:email                 # and a CPU profile of the service
 *
 * The service, the sink and this load generator run in three processes, as they would in a
 * deployment; the machine's cores are shared by all three, so figures are for the whole machine.
 */
import { performance } from "node:perf_hooks";
import { createTransport } from "nodemailer";
import { Pool } from "undici";
import { cpuMsOf, FROM, FROM_NAME, HTML, receipt, startEmailService, SUBJECT, TEXT, waitForSink, type Sink } from "./email-service.ts";

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** The relay pool of the service (handlers/email/mail/transport.ts defaults), and so of the ceiling. */
const POOL = { maxConnections: 5, maxMessages: 100 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Sends `count` messages at CONNECTIONS concurrent requests; the latency of each in ms. */
async function post(pool: Pool, apiKey: string, count: number, round: string): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count) {
        const i = next++;
        const body = receipt(i, `round-${round}`);
        const started = performance.now();
        const res = await pool.request({
          path: "/v1/emails",
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body,
        });
        const text = await res.body.text();
        latencies.push(performance.now() - started);
        if (res.statusCode !== 202) throw new Error(`POST /v1/emails answered ${res.statusCode}: ${text}`);
      }
    }),
  );
  return latencies;
}

/** The ceiling: nodemailer's pooled transport alone, the same message, the same pool, the same sink. */
async function ceiling(sink: Sink): Promise<{ rate: number; cpuMs: number }> {
  const transport = createTransport({ pool: true, host: "127.0.0.1", port: sink.port, secure: false, ignoreTLS: true, ...POOL });
  const before = await sink.received();
  let next = 0;
  const started = performance.now();
  const cpuBefore = ownCpuMs();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < MESSAGES) {
        const i = next++;
        await transport.sendMail({
          from: { name: FROM_NAME, address: FROM },
          to: `customer${i}@mail.example.net`,
          subject: SUBJECT,
          text: TEXT,
          html: HTML,
        });
      }
    }),
  );
  await waitForSink(sink, before + MESSAGES);
  const rate = MESSAGES / ((performance.now() - started) / 1000);
  const cpuMs = ownCpuMs() - cpuBefore;
  transport.close();
  return { rate, cpuMs };
}

async function main() {
  // BENCH_PROFILE=<dir>: a V8 CPU profile of the service, written when it exits.
  const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // One key sends everything here: the per-key limit (X-EM-19) would measure the policy, not the service.
  const { url, apiKey, sink, service, stop } = await startEmailService({
    keyName: "bench",
    env: { EMAIL_RATE_LIMIT_PER_SECOND: "0" },
    nodeOptions: profile,
  });
  const pool = new Pool(url, { connections: CONNECTIONS });
  console.log(
    `email benchmark: ${MESSAGES} messages per run, ${CONNECTIONS} connections, relay pool ${POOL.maxConnections} connections, ${ROUNDS} rounds, ${process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite"}`,
  );
  try {
    // Warm-up: JIT, connection pools, SQLite pages.
    await post(pool, apiKey, 500, "warm-up");
    await ceiling(sink);
    const accepted: number[] = [];
    const p50: number[] = [];
    const p99: number[] = [];
    const endToEnd: number[] = [];
    const raw: number[] = [];
    const serviceCpu: number[] = [];
    const ceilingCpu: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const before = await sink.received();
      const started = performance.now();
      const cpuBefore = cpuMsOf(service.pid!);
      const latencies = await post(pool, apiKey, MESSAGES, String(round));
      const acceptedIn = (performance.now() - started) / 1000;
      await waitForSink(sink, before + MESSAGES);
      const deliveredIn = (performance.now() - started) / 1000;
      serviceCpu.push((cpuMsOf(service.pid!) - cpuBefore) / MESSAGES);
      accepted.push(MESSAGES / acceptedIn);
      p50.push(percentile(latencies, 50));
      p99.push(percentile(latencies, 99));
      endToEnd.push(MESSAGES / deliveredIn);
      const top = await ceiling(sink);
      raw.push(top.rate);
      ceilingCpu.push(top.cpuMs / MESSAGES);
      console.log(
        `  round ${round}: accepted ${accepted.at(-1)!.toFixed(0)}/s (p50 ${p50.at(-1)!.toFixed(1)} ms, p99 ${p99.at(-1)!.toFixed(1)} ms); ` +
          `end-to-end ${endToEnd.at(-1)!.toFixed(0)}/s; ceiling ${raw.at(-1)!.toFixed(0)}/s; ` +
          `CPU per message: service ${(serviceCpu.at(-1)! * 1000).toFixed(0)} µs, ceiling ${(ceilingCpu.at(-1)! * 1000).toFixed(0)} µs`,
      );
    }
    const ratio = median(endToEnd) / median(raw);
    console.log(
      `acceptance: ${median(accepted).toFixed(0)} messages/s at ${CONNECTIONS} connections, p50 ${median(p50).toFixed(1)} ms, p99 ${median(p99).toFixed(1)} ms (closed loop; the latency target is the open-loop benchmark's)`,
    );
    console.log(`end-to-end: ${median(endToEnd).toFixed(0)} messages/s delivered over SMTP (first POST to last message received)`);
    console.log(`ceiling (nodemailer pooled transport, same message, same sink, same pool): ${median(raw).toFixed(0)} messages/s`);
    console.log(
      `CPU per message: the service ${(median(serviceCpu) * 1000).toFixed(0)} µs (API, storage and sending, all threads), the ceiling's process ${(median(ceilingCpu) * 1000).toFixed(0)} µs`,
    );
    console.log(`ratio: ${ratio.toFixed(2)}x (target >= 0.75x); per-round ${endToEnd.map((e, i) => (e / raw[i]!).toFixed(2)).join(", ")}`);
    console.log(`verdict: end-to-end ${ratio >= 0.75 ? "MET" : "NOT MET"} (>= 0.75x of the ceiling)`);
  } finally {
    await pool.close();
    await stop();
  }
}

await main();
