/** Starting and stopping Prism mock servers of the generated OpenAPI documents. */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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

/** Starts `prism mock` on 127.0.0.1:port and resolves once it answers. */
export async function startMock(file: string, port: number, options: { quiet?: boolean } = {}): Promise<RunningMock> {
  const child = spawn(process.execPath, [PRISM, "mock", join(root, file), "-h", "127.0.0.1", "-p", String(port)], {
    stdio: options.quiet ? "ignore" : "inherit",
  });
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
