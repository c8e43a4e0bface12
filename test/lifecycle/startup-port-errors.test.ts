/**
 * A port that is already taken stops the server with one line naming the variable to change and
 * exit status 2 (a configuration error), not a stack trace.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let taken: Server;
let port: number;
const dir = mkdtempSync(join(tmpdir(), "port-errors-"));
beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  port = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function start(service: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "app/main.ts", service], {
      env: { ...process.env, DATA_DIR: dir, LOG_LEVEL: "silent", HOST: "127.0.0.1", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("a port already in use", () => {
  it("the HTTP port: one line naming the service's port variable, exit 2", async () => {
    const { code, stderr } = await start("repository", { REPOSITORY_PORT: String(port) });
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(`127.0.0.1:${port} is already in use: stop the other process or set REPOSITORY_PORT to a free port.`);
  });

  it("the email service's inbound SMTP port: names EMAIL_INBOUND_SMTP_PORT", async () => {
    const { code, stderr } = await start("email", { EMAIL_PORT: "0", EMAIL_INBOUND_SMTP_PORT: String(port) });
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("set EMAIL_INBOUND_SMTP_PORT to a free port");
  });
});
