/**
 * X-EM-19: sends per second per API key. With a limit of 2, a burst of two passes and the third is
 * 429 `rate_limited` with `Retry-After`; the bucket refills with the (injected) clock, and another
 * key has its own. Without EMAIL_RATE_LIMIT_PER_SECOND the limit is 100. Needs services started
 * in-process (their configuration and clock).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectStatus } from "../harness/api.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";
import type { EmailTarget } from "../harness/targets.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let target: EmailTarget;
/** Typed clients: the full-access API key by default. */
let api: EmailWorld["api"];
/** A service with the default configuration. */
let byDefault: EmailWorld;
beforeAll(async () => {
  ({ target, api } = await emailWorld({ env: { EMAIL_RATE_LIMIT_PER_SECOND: "2" } }));
  byDefault = await emailWorld();
});
afterAll(async () => {
  await target?.close();
  await byDefault?.close();
});

const send = (apiKey: string, client = api) =>
  client(apiKey).POST("/v1/emails", {
    body: {
      from: "receipts@shop.example.com",
      to: [`delivered+rl${Date.now().toString(36)}@simulator.test`],
      subject: "Receipt",
      text: "Thanks.",
    },
  });

it("X-EM-19 a key over the per-second send limit gets 429 rate_limited with Retry-After, until the bucket refills; another key has its own", async (ctx) => {
  if (!target.clock || !target.service) return skipOnDeployment(ctx, NEEDS.clock);
  target.clock.freeze(); // only advance() refills the bucket, however slowly the machine sends
  expect((await send(target.apiKey)).response.status).toBe(202);
  expect((await send(target.apiKey)).response.status).toBe(202);
  const refused = await send(target.apiKey);
  expect(refused.response.status).toBe(429);
  expect(refused.response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(refused.error).toMatchObject({ status: 429, code: "rate_limited" });
  expect(Number(refused.response.headers.get("retry-after"))).toBe(1);

  const other = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-19 other key" } }), 201, "create API key");
  expect((await send(other.key)).response.status).toBe(202);

  target.clock.advance(1000);
  expect((await send(target.apiKey)).response.status).toBe(202);
});

it("X-EM-19 by default a key may send 100 messages in one instant: the 101st is 429 rate_limited until the bucket refills", async (ctx) => {
  const { target: t, api: client } = byDefault;
  if (!t.clock || !t.service) return skipOnDeployment(ctx, NEEDS.clock);
  t.clock.freeze();
  const statuses: number[] = [];
  for (let i = 0; i < 100; i++) statuses.push((await send(t.apiKey, client)).response.status);
  expect(statuses.every((s) => s === 202)).toBe(true);
  const refused = await send(t.apiKey, client);
  expect(refused.response.status).toBe(429);
  expect(refused.response.headers.get("ratelimit-limit")).toBe("100");
  expect(refused.error).toMatchObject({ status: 429, code: "rate_limited" });
  t.clock.advance(10);
  expect((await send(t.apiKey, client)).response.status).toBe(202);
});
