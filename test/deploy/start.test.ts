/**
 * The production start path works without a transpiler and without dev dependencies: the services are
 * started the way deploy/Dockerfile's image starts them, from a copy of exactly what the image copies
 * (its COPY lines), with its ENTRYPOINT and CMD (node itself, no npm, no shell) and its ENV, after the
 * compose file's migration command and the admin command. test/deploy/production-imports.js makes every package
 * that `npm ci --omit=dev` leaves out, and tsx, unavailable to them. Then all three answer /ready, the
 * image's HEALTHCHECK command passes, and SIGTERM, sent to node as to a container's PID 1, stops them
 * cleanly.
 *
 * What this does not do: build or run the image itself (scripts/container-check.sh does, where buildah
 * and podman can run); it listens on 127.0.0.1, not the image's HOST=0.0.0.0, and uses free ports.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freePort } from "../../support/free-port.ts";
import { DOCKERFILE, finalStage, ROOT } from "./dockerfile.ts";
import { until } from "../support/server-process.ts";

const image = finalStage(DOCKERFILE);
const compose = parse(readFileSync(join(ROOT, "deploy/compose.yaml"), "utf8")) as { services: Record<string, { command?: string[] }> };
const HOOK = join(ROOT, "test/deploy/production-imports.js");

const scratch = mkdtempSync(join(tmpdir(), "deploy-start-"));
const tree = join(scratch, "app");
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});

/** The image's file tree: each COPY of the final stage, from the checkout, under `tree` (its WORKDIR). */
function copyWhatTheImageCopies(): void {
  mkdirSync(tree, { recursive: true });
  for (const [source, destination] of image.copies) {
    const from = join(ROOT, source);
    const to =
      statSync(from).isDirectory() || !destination.endsWith("/") ? join(tree, destination) : join(tree, destination, basename(source));
    mkdirSync(dirname(to), { recursive: true });
    cpSync(from, to, { recursive: true });
  }
  // The dependencies stage's node_modules: the checkout's, with what a production install lacks refused by HOOK.
  symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
}

/** The image's argv for `command` (its CMD when none), node being this test's node, with HOOK preloaded. */
function imageArgv(command: string[] = image.cmd): string[] {
  const [program, ...args] = [...image.entrypoint, ...command];
  expect(program, "the image's ENTRYPOINT runs node itself").toBe("node");
  return ["--import", HOOK, ...args];
}

let env: NodeJS.ProcessEnv;
let ports: Record<"identity" | "repository" | "email", number>;

beforeAll(async () => {
  copyWhatTheImageCopies();
  ports = { identity: await freePort(), repository: await freePort(), email: await freePort() };
  // Only the image's ENV and what a test must change: no variable of this test run leaks in (NODE_OPTIONS
  // with a loader, CONFORMANCE_*, …).
  env = {
    PATH: process.env.PATH ?? "",
    ...image.env,
    HOST: "127.0.0.1",
    DATA_DIR: join(scratch, "data"),
    IDENTITY_PORT: String(ports.identity),
    REPOSITORY_PORT: String(ports.repository),
    EMAIL_PORT: String(ports.email),
    EMAIL_INBOUND_SMTP_PORT: "0",
    // No balancer polls this server's /ready: SIGTERM need not keep the ports open first.
    SHUTDOWN_DELAY_MS: "0",
  };
});

async function status(url: string): Promise<number | "refused"> {
  try {
    const res = await fetch(url, { headers: { connection: "close" } });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return "refused";
  }
}

/** The image's HEALTHCHECK command, run in the tree with the container's environment; its exit code. */
function healthcheck(): number | null {
  const [program, ...args] = image.healthcheck!.command;
  expect(program).toBe("node");
  return spawnSync(process.execPath, args, { cwd: tree, env, encoding: "utf8", timeout: 30_000 }).status;
}

describe("the production start path (deploy/Dockerfile's command, no transpiler, no dev dependencies)", () => {
  it("migrates, serves /ready on all three services, passes the HEALTHCHECK, and stops cleanly on SIGTERM", async () => {
    const migrate = spawnSync(process.execPath, imageArgv(compose.services.migrate?.command), {
      cwd: tree,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(migrate.status, `the compose file's migrate command failed:\n${migrate.stderr}`).toBe(0);
    expect(migrate.stdout).toMatch(/identity: applied/);
    // The admin command, as an operator runs it in the image (`docker run -i … app/admin.ts …`).
    const admin = spawnSync(process.execPath, imageArgv(["app/admin.ts", "email", "create-api-key", "deploy-start"]), {
      cwd: tree,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(admin.status, `app/admin.ts failed:\n${admin.stderr}`).toBe(0);

    const server = spawn(process.execPath, imageArgv(), { cwd: tree, env, stdio: ["ignore", "pipe", "pipe"] });
    children.add(server);
    let output = "";
    server.stdout.on("data", (c: Buffer) => (output += c.toString()));
    server.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)));
    const urls = Object.values(ports).map((port) => `http://127.0.0.1:${port}`);
    await until(
      async () => {
        if (server.exitCode !== null) throw new Error(`the server exited with ${server.exitCode}:\n${output}`);
        return (await Promise.all(urls.map((u) => status(`${u}/ready`)))).every((s) => s === 200);
      },
      "all three services' /ready",
      120_000,
    );
    // Identity's dashboard is bundled by esbuild from web/ at start: the image's files are enough for it.
    expect(await status(`http://127.0.0.1:${ports.identity}/dashboard/app.js`)).toBe(200);
    expect(healthcheck(), "the image's HEALTHCHECK command while the services are ready").toBe(0);

    server.kill("SIGTERM");
    expect(await exited, output).toBe(0);
    children.delete(server);
    expect(output).toMatch(/"clean":true/);
    expect(output, "tsx was never asked for").not.toMatch(/refused tsx/);
    expect(healthcheck(), "the HEALTHCHECK once the services are gone").toBe(1);
  }, 300_000);
});
