/**
 * Starting and stopping Prism mock servers of the generated OpenAPI documents, optionally behind
 * a small front that answers CORS as the real service does (server/http/cors.ts with the mock's
 * policy, scripts/mock-cors.ts): Prism's own `--cors` allows every origin on every path, which
 * would let a page work on the mock that the real service refuses.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest, type Server } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./lib/free-port.ts";
import Koa from "koa";
import { corsMiddleware, type CorsPolicy } from "../server/http/cors.ts";
import { HttpProblem } from "../server/http/problem.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PRISM = join(root, "node_modules/@stoplight/prism-cli/dist/index.js");

/** Mock name → generated document and documented port. */
export const MOCKS = {
  identity: { file: "generated/openapi/identity.yaml", port: 4001 },
  repository: { file: "generated/openapi/repository.yaml", port: 4002 },
  email: { file: "generated/openapi/email.yaml", port: 4003 },
  "identity-webhooks": { file: "generated/openapi/identity-webhooks.yaml", port: 4011 },
  "email-webhooks": { file: "generated/openapi/email-webhooks.yaml", port: 4013 },
} as const;

export interface RunningMock {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export interface MockOptions {
  quiet?: boolean;
  /** Answer CORS by this policy, in front of Prism. */
  cors?: CorsPolicy;
  /** Prism's own `--cors` (every origin, every path): on by default, off behind a CORS front. */
  prismCors?: boolean;
}

/**
 * Starts `prism mock` on 127.0.0.1:port and resolves once it answers. With `cors`, Prism listens
 * on a free port of its own with its CORS off, and `port` is a front that answers CORS by that
 * policy and hands everything else to Prism unchanged.
 */
export async function startMock(file: string, port: number, options: MockOptions = {}): Promise<RunningMock> {
  if (options.cors) {
    const prism = await startMock(file, await freePort(), { quiet: options.quiet, prismCors: false });
    const front = await startCorsFront(options.cors, prism.url, port);
    return {
      url: `http://127.0.0.1:${port}`,
      process: prism.process,
      stop: async () => {
        await new Promise<void>((resolve) => {
          front.closeAllConnections();
          front.close(() => resolve());
        });
        await prism.stop();
      },
    };
  }
  const child = spawn(
    process.execPath,
    [PRISM, "mock", join(root, file), "-h", "127.0.0.1", "-p", String(port), `--cors=${options.prismCors ?? true}`],
    {
      stdio: options.quiet ? "ignore" : "inherit",
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prism for ${file} exited with ${child.exitCode}`);
    try {
      await fetch(url, { signal: AbortSignal.timeout(500) });
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`prism for ${file} did not start within 30 s`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}

/** The CORS front: the policy's answers (refused preflights as problem details, as the services answer them), then Prism's. */
async function startCorsFront(policy: CorsPolicy, upstream: string, port: number): Promise<Server> {
  const target = new URL(upstream);
  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      ctx.status = err.status;
      ctx.type = "application/problem+json";
      ctx.body = err.toBody();
    }
  });
  app.use(corsMiddleware(policy, {}));
  app.use(async (ctx) => {
    ctx.respond = false; // the answer is Prism's, streamed; the CORS headers are already set on it
    await new Promise<void>((resolve, reject) => {
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: ctx.method, path: ctx.url, headers: ctx.req.headers },
        (answer) => {
          ctx.res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(ctx.res);
          answer.on("end", resolve);
          answer.on("error", reject);
        },
      );
      forward.on("error", reject);
      ctx.req.pipe(forward);
    });
  });
  const server = app.listen(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => server.once("listening", resolve).once("error", reject));
  return server;
}
