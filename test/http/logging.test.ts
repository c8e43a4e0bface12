/** Logs never carry passwords, tokens or secrets, even when requests fail (checked on the repository service). */
import { Writable } from "node:stream";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { ManualClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import { listen, type Listening } from "../../server/http/listen.ts";
import { createRepositoryService } from "../../handlers/repository/service.ts";

let lines = "";
let http: Listening;
let close: () => Promise<void>;
const dataDir = mkdtempSync(join(tmpdir(), "logging-"));

beforeAll(async () => {
  const sink = new Writable({ write: (chunk, _enc, done) => ((lines += chunk.toString()), done()) });
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: "trace" });
  const service = await createRepositoryService(config, new ManualClock(), pino({ level: "trace" }, sink));
  await service.deps.accounts.createUser("log@example.com", "a-very-secret-password");
  http = await listen(service.app, "127.0.0.1", 0);
  close = service.close;
});
afterAll(async () => {
  await http?.close();
  await close?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${http.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  }).then((r) => r.json() as Promise<Record<string, string>>);

describe("logs", () => {
  it("X-API-8 logs never contain passwords, access, refresh or agent tokens, nor query strings", async () => {
    const pair = await post("/auth/login", { email: "log@example.com", password: "a-very-secret-password" });
    await post("/auth/login", { email: "log@example.com", password: "wrong-secret-password" });
    const rotated = await post("/auth/refresh", { refreshToken: pair.refreshToken });
    const agent = await post("/buildagent/register", { name: "x" }, { authorization: `Bearer ${rotated.accessToken}` });
    await fetch(`${http.url}/repository?page=1&secret=query-secret`, { headers: { authorization: `Bearer ${agent.agentToken}` } });
    await post("/auth/refresh", { refreshToken: pair.refreshToken }); // reuse: refused, logged
    expect(lines).toContain('"path":"/auth/login"');
    for (const secret of [
      "a-very-secret-password",
      "wrong-secret-password",
      pair.accessToken,
      pair.refreshToken,
      rotated.refreshToken,
      agent.agentToken,
      "query-secret",
    ]) {
      expect(lines).not.toContain(secret);
    }
  });
});
