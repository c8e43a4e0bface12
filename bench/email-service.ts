/**
 * The email service as the email benchmarks (email.ts, email-memory.ts) run it, in processes of its
 * own as in a deployment: an SMTP sink (smtp-sink.ts) as its relay, the service (`app/main.ts
 * email`) on a free 127.0.0.1 port with a fresh SQLite folder (PostgreSQL with BENCH_DATABASE_URL),
 * and its first API key, made by the admin command as an operator makes it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { freePort } from "../support/free-port.ts";
import { cpuMicrosOf } from "./lib/proc-cpu.ts";

const tsx = ["--import", "tsx"];

export interface Sink {
  port: number;
  /** How many messages the sink has received so far. */
  received(): Promise<number>;
  stop(): void;
}

async function startSink(): Promise<Sink> {
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

/** Resolves once the sink has received `total` messages; fails after `timeoutMs`. */
export async function waitForSink(sink: Sink, total: number, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await sink.received()) < total) {
    if (Date.now() > deadline) throw new Error(`the sink received ${await sink.received()} of ${total}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...tsx, ...args], { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.on("exit", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`${args.join(" ")} exited ${code}`))));
  });
}

async function startService(env: NodeJS.ProcessEnv, url: string, nodeOptions: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeOptions, ...tsx, "app/main.ts", "email"], { env, stdio: ["ignore", "inherit", "inherit"] });
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

export interface BenchEmailService {
  url: string;
  apiKey: string;
  /** The service's process (its pid for the memory benchmark). */
  service: ChildProcess;
  sink: Sink;
  /** Stops the service (SIGTERM, waiting for its exit) and the sink, and removes the data folder. */
  stop(): Promise<void>;
}

/**
 * The sink, then the service relaying to it with `env` added (a benchmark's own settings), and an
 * API key named `keyName`. `nodeOptions` go to the service's node (a CPU profile).
 */
export async function startEmailService(o: {
  keyName: string;
  env?: Record<string, string>;
  nodeOptions?: string[];
}): Promise<BenchEmailService> {
  const dir = mkdtempSync(join(tmpdir(), "bench-email-"));
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
    SHUTDOWN_DELAY_MS: "0", // no balancer in front: the SIGTERM at the end closes the port at once
    ...o.env,
  };
  const apiKey = (await run(["app/admin.ts", "email", "create-api-key", o.keyName], env)).split(/\s+/).find((w) => w.startsWith("em_"))!;
  const service = await startService(env, url, o.nodeOptions ?? []);
  return {
    url,
    apiKey,
    service,
    sink,
    stop: async () => {
      service.kill("SIGTERM");
      await new Promise((r) => service.once("exit", r));
      sink.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const FROM = "receipts@shop.example.com";
export const FROM_NAME = "Shop";
export const SUBJECT = "Your receipt";
export const TEXT = "Thanks for your order. It ships tomorrow.\n".repeat(20);
export const HTML = `<p>${"Thanks for your order. It ships tomorrow. ".repeat(20)}</p>`;

/** The benchmarks' message: a receipt of about 1 KB of text and 1 KB of HTML to one recipient, `i`, tagged `tag`. */
export const receipt = (i: number, tag: string): string =>
  JSON.stringify({
    from: FROM,
    fromName: FROM_NAME,
    to: [`customer${i}@mail.example.net`],
    subject: SUBJECT,
    text: TEXT,
    html: HTML,
    tags: [tag],
  });

/**
 * CPU time (user + system, all threads) a process has used so far, ms, from /proc (Linux; 0
 * elsewhere). Less sensitive than the rates to what else the machine runs.
 */
export function cpuMsOf(pid: number): number {
  try {
    return cpuMicrosOf(pid) / 1000;
  } catch {
    return 0;
  }
}
