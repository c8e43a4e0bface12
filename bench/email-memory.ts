/**
 * Memory of one large send, on demand (never in `npm test`): the email service's resident memory
 * (RSS) while it composes and relays one message with a 7 MiB attachment to 50 recipients (the
 * copies share one decoded attachment: results/2026-11-28-email-memory.md has the figures before
 * and after). The service, an SMTP sink as its relay (email-service.ts) and this client run in
 * three processes; the service's RSS is read from /proc (Linux) every few milliseconds, and its
 * peak from VmHWM, reset before the send.
 *
 *   npm run bench:email-memory
 *   BENCH_RECIPIENTS=10 BENCH_ATTACHMENT_MIB=2 npm run bench:email-memory
 *   BENCH_DATABASE_URL=postgres://… npm run bench:email-memory
 *   BENCH_LABEL="before the fix" npm run bench:email-memory   # a note written with the figures
 *
 * Prints the figures and writes them to bench/results/email-memory-<UTC time>.txt with the commit,
 * the machine's load and the settings.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { startEmailService, waitForSink } from "./email-service.ts";

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 50);
const ATTACHMENT_BYTES = Math.round(Number(process.env.BENCH_ATTACHMENT_MIB ?? 7) * 1024 * 1024);
const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** VmRSS and VmHWM of a process, in bytes. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

async function main() {
  const { url, apiKey, service, sink, stop } = await startEmailService({ keyName: "bench-memory" });
  const pid = service.pid!;
  const load = loadavg()[0]!.toFixed(1);
  try {
    const send = async (to: string[], attachmentBytes: number) => {
      const res = await fetch(`${url}/v1/emails`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          from: "reports@shop.example.com",
          to,
          subject: "Your monthly report",
          text: "The report is attached.",
          html: "<p>The report is attached.</p>",
          attachments: [
            {
              filename: "report.pdf",
              contentType: "application/pdf",
              content: Buffer.alloc(attachmentBytes, "%PDF-1.7 report ").toString("base64"),
            },
          ],
        }),
      });
      if (res.status !== 202) throw new Error(`POST /v1/emails answered ${res.status}: ${await res.text()}`);
    };
    const delivered = (total: number) => waitForSink(sink, total);
    // Warm-up: the code paths, the pools and the database pages, with a small attachment.
    await send(["warm-up@mail.example.net"], 64 * 1024);
    await delivered(1);
    await new Promise((r) => setTimeout(r, 1000));

    const before = memoryOf(pid).rss;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, "5"); // resets VmHWM to the current RSS
    } catch {
      // not allowed here: the polled maximum stands alone
    }
    let polled = before;
    const poll = setInterval(() => {
      polled = Math.max(polled, memoryOf(pid).rss);
    }, 5);
    const started = performance.now();
    await send(
      Array.from({ length: RECIPIENTS }, (_, i) => `customer${i}@mail.example.net`),
      ATTACHMENT_BYTES,
    );
    await delivered(1 + RECIPIENTS);
    const seconds = (performance.now() - started) / 1000;
    clearInterval(poll);
    const { rss: after, peak: hwm } = memoryOf(pid);
    const peak = Math.max(polled, hwm);

    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim() ? "+changes" : "";
    const at = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const lines = [
      `email memory of one send: ${RECIPIENTS} recipients, one attachment of ${MiB(ATTACHMENT_BYTES)} (decoded), relayed to an SMTP sink`,
      `  ${at}, commit ${commit}${dirty}${process.env.BENCH_LABEL ? ` (${process.env.BENCH_LABEL})` : ""}, Node ${process.version}, ${cpus().length} cores, load ${load} at start, ${process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite"}, EMAIL_SEND_CONCURRENCY ${process.env.EMAIL_SEND_CONCURRENCY ?? "20 (default)"}`,
      `  service RSS before the send: ${MiB(before)}`,
      `  peak RSS while it was composed and relayed: ${MiB(peak)} (+${MiB(peak - before)})`,
      `  RSS after the last copy was received: ${MiB(after)}`,
      `  all ${RECIPIENTS} copies received in ${seconds.toFixed(1)} s`,
    ];
    console.log(lines.join("\n"));
    mkdirSync("bench/results", { recursive: true });
    writeFileSync(join("bench/results", `email-memory-${at.replace(/:/g, "")}.txt`), `${lines.join("\n")}\n`);
  } finally {
    await stop();
  }
}

await main();
