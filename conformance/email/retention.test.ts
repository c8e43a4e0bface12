/**
 * X-EM-25 retention, on the service's (injected) clock: a message whose copies all have their
 * outcome is kept EMAIL_RETENTION_MESSAGES_SECONDS after it was sent, then `GET /v1/emails/{id}` is
 * 404 `not_found` like an id never issued, and its Idempotency-Key (24 hours) is forgotten, so the
 * same key and body send a new message. In-process: a deployment's clock cannot be moved.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectStatus } from "../harness/api.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";
import type { EmailTarget } from "../harness/targets.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const RETENTION_SECONDS = 7 * 24 * 3600;
let target: EmailTarget;
let api: EmailWorld["api"];
beforeAll(async () => {
  ({ target, api } = await emailWorld({ env: { EMAIL_RETENTION_MESSAGES_SECONDS: String(RETENTION_SECONDS) } }));
});
afterAll(async () => target?.close());

const message = {
  from: "receipts@shop.example.com",
  to: ["delivered@simulator.test"],
  subject: "Receipt",
  text: "Thanks.",
};
const send = (key: string) => api().POST("/v1/emails", { body: message, params: { header: { "Idempotency-Key": key } } });

it("X-EM-25 a delivered message stays readable for its retention period, then is 404 not_found and its Idempotency-Key sends anew", async (ctx) => {
  if (!target.clock || !target.service) return skipOnDeployment(ctx, NEEDS.clock);
  const key = `retention-${Date.now()}`;
  const sent = await expectStatus(send(key), 202, "send");
  await target.settle();
  const read = () => api().GET("/v1/emails/{emailId}", { params: { path: { emailId: sent.id } } });
  expect((await expectStatus(read(), 200, "read")).status).toBe("Delivered");
  // Within its 24 hours the key replays the message, purge or not.
  await target.service.purge();
  expect((await expectStatus(send(key), 202, "replay")).id).toBe(sent.id);

  // A day before the period ends, the purge leaves it (and the key's 24 hours are over: a new send).
  target.clock.advance((RETENTION_SECONDS - 24 * 3600) * 1000);
  await target.service.purge();
  expect((await read()).response.status).toBe(200);

  target.clock.advance(2 * 24 * 3600 * 1000);
  const deleted = await target.service.purge();
  expect(deleted.messages).toBeGreaterThanOrEqual(1);
  const gone = await read();
  expect(gone.response.status).toBe(404);
  expect(gone.error).toMatchObject({ status: 404, code: "not_found" });

  const again = await expectStatus(send(key), 202, "send again");
  expect(again.id).not.toBe(sent.id);
});
