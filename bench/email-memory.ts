/**
 * Memory of one large send, on demand (never in `npm test`): the email service's resident memory
 * (RSS) while it composes and relays one message with a 7 MiB attachment to 50 recipients (issue 26:
 * each copy used to decode the attachment for itself). The service, an SMTP sink as its relay and
 * this client run in three processes; the service's RSS is read from /proc (Linux) every few
 * milliseconds, and its peak from VmHWM, reset before the send.
 *
 *   npm run bench:email-memory
 *   BENCH_RECIPIENTS=10 BENCH_ATTACHMENT_MIB=2 npm run bench:email-memory
 *   BENCH_DATABASE_URL=postgres://… npm run bench:email-memory
 *   BENCH_LABEL="before the fix" npm run bench:email-memory   # a note written with the figures
 *
 * Prints the figures and writes them to bench/results/email-memory-<UTC time>.txt with the commit,
 * the machine's load and the settings.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { freePort } from "../support/free-port.ts";

const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS ?? 50);
const ATTACHMENT_BYTES = Math.round(Number(process.env.BENCH_ATTACHMENT_MIB ?? 7) * 1024 * 1024);
const tsx = ["--import", "tsx"];
const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** VmRSS and VmHWM of a process, in bytes. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

async function startSink(): Promise<{ port: number; received(): Promise<number>; stop(): void }> {
  const child = spawn(process.execPath, [...tsx, "bench/smtp-sink.ts"], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const next = () => new Promise<string>((resolve) => lines.once("line", resolve));
  const port = Number(await next());
  return {
    port,
    received: async () => {
      const line = next();
      child.stdin!.write("\n");
      return Number(await line);
    },
    stop: () => void child.kill("SIGKILL"),
  };
}

function run(args: string[], env: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, [...tsx, ...args], { env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
}

async function startService(env: NodeJS.ProcessEnv, url: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...tsx, "app/main.ts", "email"], { env, stdio: ["ignore", "inherit", "inherit"] });
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error("the email service did not start");
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "bench-email-memory-"));
  const sink = await startSink();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    LOG_LEVEL: "warn",
    DATA_DIR: dir,
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? "",
    EMAIL_PORT: String(port),
    EMAIL_PUBLIC_URL: url,
    EMAIL_INBOUND_SMTP_PORT: "0",
    EMAIL_SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    EMAIL_SENDING_DOMAINS: "shop.example.com",
  };
  const apiKey = run(["app/admin.ts", "email", "create-api-key", "bench-memory"], env)
    .split(/\s+/)
    .find((w) => w.startsWith("em_"))!;
  const service = await startService(env, url);
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
    const delivered = async (total: number) => {
      while ((await sink.received()) < total) await new Promise((r) => setTimeout(r, 20));
    };
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
    service.kill("SIGTERM");
    await new Promise((r) => service.once("exit", r));
    sink.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
