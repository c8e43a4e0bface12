/**
 * Graceful shutdown of the real server process (app/main.ts, all three services): requests in
 * flight when SIGTERM or SIGINT arrives are answered with their normal status, `/ready` answers 503
 * from the signal on (X-API-10) while `/health` stays 200, the ports then close, and the process
 * exits 0 with every write whole. Requests are held in flight by the client, which sends part of
 * each body before the signal and the rest only once the port is closed, so nothing depends on
 * how fast the machine is.
 */
import { afterAll, expect, it } from "vitest";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knexFactory from "knex";
import { admin, getStatus as get, killAll, portClosed, serverEnv, startServer, until } from "../support/server-process.ts";

const PASSWORD = "correct horse battery staple";
const EMAIL = "dev@example.com";
// One user signs in 40 times at once from one address here: sign-in throttling is not under test.
const ENV = { LOGIN_MAX_FAILURES: "1000", LOGIN_ADDRESS_MAX_FAILURES: "1000" };
const dirs: string[] = [];
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

/**
 * A request on a connection of its own whose body is sent in two parts: the first `sendFirst`
 * bytes once the server has taken the request (`reached`: its `100 Continue` comes as the server
 * starts on it, so from then on it is in flight), the rest when `finish()` is called.
 */
function heldRequest(url: string, method: string, path: string, body: Buffer | string, headers: Record<string, string>, sendFirst: number) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  let finish!: () => void;
  let reached!: Promise<void>;
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      { method, agent: false, headers: { ...headers, "content-length": String(bytes.length), expect: "100-continue" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on("error", reject);
    reached = new Promise<void>((resolveReached, rejectReached) => {
      req.once("continue", () => {
        req.write(bytes.subarray(0, sendFirst));
        resolveReached();
      });
      req.once("error", rejectReached);
    });
    finish = () => req.end(bytes.subarray(sendFirst));
  });
  return { answer, reached, finish: () => finish() };
}

it("X-API-10 SIGTERM: sign-ins and a slow upload in flight are all answered, /ready is 503 while draining, the ports close, the process exits 0 and every write is whole", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "shutdown-"));
  dirs.push(dataDir);
  admin(serverEnv(dataDir), ["repository", "create-user", EMAIL], `${PASSWORD}\n`);
  const apiKey = admin(serverEnv(dataDir), ["email", "create-api-key", "shutdown-test"]).match(/em_live_[A-Za-z0-9_-]{43}/)?.[0];
  expect(apiKey).toBeTruthy();
  // The delay keeps the ports open after the signal, so /ready's 503 can be seen on new connections.
  const server = await startServer(dataDir, { ...ENV, SHUTDOWN_DELAY_MS: "1500", SHUTDOWN_TIMEOUT_MS: "60000" });
  const { repository, email, identity } = server.urls;
  for (const url of [repository, email, identity]) expect(await get(url, "/ready")).toBe(200);

  const login = JSON.stringify({ email: EMAIL, password: PASSWORD });
  const json = { "content-type": "application/json" };
  // 20 sign-ins held mid-body, 20 sent whole just before the signal.
  const heldLogins = Array.from({ length: 20 }, () => heldRequest(repository, "POST", "/auth/login", login, json, 10));
  // The slow upload: a 3 MiB attachment, of which 1 MiB arrives before the signal.
  const attachment = Buffer.alloc(3 * 1024 * 1024, 7);
  const upload = heldRequest(
    email,
    "POST",
    "/v1/emails",
    JSON.stringify({
      from: "receipts@shop.example.com",
      to: ["delivered@simulator.test"],
      subject: "A large invoice",
      text: "Attached.",
      attachments: [{ filename: "invoice.bin", contentType: "application/octet-stream", content: attachment.toString("base64") }],
    }),
    { ...json, authorization: `Bearer ${apiKey}` },
    1024 * 1024,
  );
  const heldSends = Array.from({ length: 5 }, (_, i) =>
    heldRequest(
      email,
      "POST",
      "/v1/emails",
      JSON.stringify({
        from: "receipts@shop.example.com",
        to: [`delivered+${i}@simulator.test`],
        subject: `Receipt ${i}`,
        text: "Thanks.",
      }),
      { ...json, authorization: `Bearer ${apiKey}` },
      20,
    ),
  );
  const held = [...heldLogins, upload, ...heldSends];
  // Every held request is in flight: the server has started on it and waits for the rest of its body.
  await Promise.all(held.map((r) => r.reached));
  const wholeLogins = Array.from({ length: 20 }, () =>
    heldRequest(repository, "POST", "/auth/login", login, json, Buffer.byteLength(login)),
  );
  await Promise.all(wholeLogins.map((r) => r.reached));

  server.child.kill("SIGTERM");
  await until(async () => (await get(repository, "/ready")) === 503, "/ready to answer 503");
  for (const url of [email, identity]) expect(await get(url, "/ready")).toBe(503);
  // Liveness is not readiness: a draining instance is alive.
  expect(await get(repository, "/health")).toBe(200);
  // After the delay the ports close while the held requests are still in flight.
  await until(() => portClosed(repository), "the repository port to close");
  await until(() => portClosed(email), "the email port to close");
  await until(() => portClosed(identity), "the identity port to close");
  expect(server.child.exitCode).toBeNull();
  for (const r of [...held, ...wholeLogins]) r.finish();

  const logins = await Promise.all([...heldLogins, ...wholeLogins].map((r) => r.answer));
  for (const answer of logins) {
    expect(answer.status).toBe(200);
    expect(answer.body.refreshToken).toEqual(expect.any(String));
  }
  for (const answer of await Promise.all(heldLogins.map((r) => r.answer))) expect(answer.headers.connection).toBe("close");
  const uploaded = await upload.answer;
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(202);
  expect(uploaded.headers.connection).toBe("close");
  const sends = await Promise.all(heldSends.map((r) => r.answer));
  for (const answer of sends) expect(answer.status).toBe(202);

  expect(await server.exited).toBe(0);
  expect(server.logs.some((l) => l.msg === "stopped" && l.clean === true)).toBe(true);

  // Nothing written half: every answered sign-in has its refresh token, every accepted email its
  // copy and (the upload) its whole attachment, and no copy is left claimed by the stopped dispatcher.
  const repositoryDb = knexFactory({
    client: "better-sqlite3",
    connection: { filename: join(dataDir, "repository.sqlite") },
    useNullAsDefault: true,
  });
  const emailDb = knexFactory({
    client: "better-sqlite3",
    connection: { filename: join(dataDir, "email.sqlite") },
    useNullAsDefault: true,
  });
  try {
    expect(Number((await repositoryDb("refresh_tokens").count({ n: "*" }).first())?.n)).toBe(logins.length);
    const ids = [uploaded, ...sends].map((a) => a.body.id as string);
    expect(Number((await emailDb("emails").whereIn("id", ids).count({ n: "*" }).first())?.n)).toBe(ids.length);
    expect(Number((await emailDb("emails").count({ n: "*" }).first())?.n)).toBe(ids.length);
    const stored = await emailDb("email_attachments").where({ email_id: uploaded.body.id }).first();
    expect(stored.size).toBe(attachment.length);
    expect(Buffer.from(stored.content, "base64").equals(attachment)).toBe(true);
    const copies = await emailDb("email_recipients").whereIn("email_id", ids).select("status", "lease_token");
    expect(copies).toHaveLength(ids.length);
    expect(copies.filter((c) => c.lease_token !== null)).toEqual([]);
    expect(await integrity(repositoryDb)).toBe("ok");
    expect(await integrity(emailDb)).toBe("ok");
  } finally {
    await repositoryDb.destroy();
    await emailDb.destroy();
  }
}, 120_000);

it("X-API-10 SIGINT (Ctrl-C) does not wait SHUTDOWN_DELAY_MS: the ports close at once, a request in flight is answered, exit 0", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "shutdown-int-"));
  dirs.push(dataDir);
  admin(serverEnv(dataDir), ["repository", "create-user", EMAIL], `${PASSWORD}\n`);
  // A delay far longer than `until` waits for the port to close: only SIGTERM waits it.
  const server = await startServer(dataDir, { ...ENV, SHUTDOWN_DELAY_MS: "60000", SHUTDOWN_TIMEOUT_MS: "120000" }, ["repository"]);
  const { repository } = server.urls;
  const login = JSON.stringify({ email: EMAIL, password: PASSWORD });
  const held = heldRequest(repository, "POST", "/auth/login", login, { "content-type": "application/json" }, 5);
  await held.reached;
  server.child.kill("SIGINT");
  await until(() => portClosed(repository), "the repository port to close");
  held.finish();
  const answer = await held.answer;
  expect(answer.status).toBe(200);
  expect(answer.headers.connection).toBe("close");
  expect(await server.exited).toBe(0);
}, 60_000);

async function integrity(db: ReturnType<typeof knexFactory>): Promise<string> {
  const rows = (await db.raw("PRAGMA integrity_check")) as Array<{ integrity_check: string }>;
  return rows.map((r) => r.integrity_check).join("; ");
}
