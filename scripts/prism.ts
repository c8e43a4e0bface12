/**
 * Starting and stopping Prism mock servers of the generated OpenAPI documents. Each is Prism on a
 * port of its own behind a small front on the mock's port, so that a page sees what the service
 * would answer:
 * - a request that breaks the contract gets the service's 400 naming each broken field, built from
 *   Prism's `sl-violations` (scripts/mock-violations.ts, X-MOCK-4), not the first documented 400
 *   example Prism answers with;
 * - optionally, CORS answered as the real service does (server/http/cors.ts with the mock's policy,
 *   scripts/mock-cors.ts): Prism's own `--cors` allows every origin on every path, which would let a
 *   page work on the mock that the real service refuses;
 * - on the repository mock, the service's rule for whose Bearer tokens it takes
 *   (scripts/mock-tokens.ts, X-MOCK-5): Prism alone takes any token.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { request as httpRequest, type Server } from "node:http";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { freePort } from "../support/free-port.ts";
import Koa from "koa";
import type { ContractDocument } from "../support/contract/documents.ts";
import { corsMiddleware, type CorsPolicy } from "../server/http/cors.ts";
import { problemMiddleware } from "../server/http/errors.ts";
import type { TrustedIssuerSettings } from "../handlers/repository/domain/trusted-issuer.ts";
import { contractProblem } from "./mock-violations.ts";
import { repositoryTokenRule } from "./mock-tokens.ts";

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
  /** Answer CORS by this policy in the front; without one, Prism's own `--cors` (every origin, every path) answers. */
  cors?: CorsPolicy;
  /** The repository mock: the identity service whose access tokens it takes, as `REPOSITORY_TRUSTED_ISSUER` does for the service. */
  trustedIssuer?: TrustedIssuerSettings;
}

/**
 * Starts `prism mock` on a free port of 127.0.0.1 and the front on `port`, and resolves once both
 * answer.
 */
export async function startMock(file: string, port: number, options: MockOptions = {}): Promise<RunningMock> {
  const prism = await startPrism(file, await freePort(), { quiet: options.quiet, cors: !options.cors });
  const document: ContractDocument = {
    name: basename(file, ".yaml"),
    file,
    receiver: basename(file, ".yaml").endsWith("-webhooks"),
    definition: parse(readFileSync(join(root, file), "utf8")),
  };
  const front = await startFront(document, options, prism.url, port).catch(async (err) => {
    await prism.stop();
    throw err;
  });
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

async function startPrism(file: string, port: number, options: { quiet?: boolean; cors: boolean }): Promise<RunningMock> {
  const child = spawn(
    process.execPath,
    [PRISM, "mock", join(root, file), "-h", "127.0.0.1", "-p", String(port), `--cors=${options.cors}`],
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

/**
 * The front: the CORS policy's answers when there is one (refused preflights as problem details, as
 * the services answer them), the repository's token rule, then Prism's answer, streamed as it is unless it refuses a request
 * that breaks the contract: that one becomes the service's 400 (contractProblem).
 */
async function startFront(document: ContractDocument, options: MockOptions, upstream: string, port: number): Promise<Server> {
  const target = new URL(upstream);
  const app = new Koa();
  app.use(problemMiddleware());
  if (options.cors) app.use(corsMiddleware(options.cors, {}));
  if (document.name === "repository") app.use(repositoryTokenRule(document, options.trustedIssuer));
  app.use(async (ctx) => {
    ctx.respond = false; // the answer is Prism's (or the service's 400 in its place); the CORS headers are already set on it
    await new Promise<void>((resolve, reject) => {
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: ctx.method, path: ctx.url, headers: ctx.req.headers },
        (answer) => {
          answer.on("error", reject);
          const status = answer.statusCode ?? 502;
          const problem = contractProblem(document, { method: ctx.method, path: ctx.path }, { status, headers: answer.headers });
          if (!problem) {
            ctx.res.writeHead(status, answer.headers);
            answer.pipe(ctx.res);
            answer.on("end", resolve);
            return;
          }
          const headers = { ...answer.headers };
          delete headers["content-length"];
          delete headers["transfer-encoding"];
          answer.resume(); // Prism's canned example is dropped
          answer.on("end", () => {
            ctx.res.writeHead(problem.status, {
              ...headers,
              "content-type": problem.contentType,
              "content-length": String(Buffer.byteLength(problem.body)),
            });
            ctx.res.end(problem.body, () => resolve());
          });
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
