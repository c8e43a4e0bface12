/**
 * The copies of one message composed at the same time share what they have in common:
 * one decoded buffer of each attachment, decoded once, instead of a base64 string each that nodemailer
 * decoded again per copy (a 50-recipient send of a 7 MiB attachment held fifty). The message's
 * shared parts are dropped with the last copy that used them. Runs the in-process service on the
 * database the suite is given (CONFORMANCE_DATABASE_URL: PostgreSQL; else SQLite).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { OutgoingCopy } from "../../handlers/email/mail/compose.ts";
import type { RecipientRow } from "../../handlers/email/storage/messages.ts";
import { expectStatus } from "../../conformance/harness/api.ts";
import type { EmailTarget } from "../../conformance/harness/targets.ts";
import { emailWorld, type EmailWorld } from "../../conformance/harness/worlds.ts";

let target: EmailTarget;
let api: EmailWorld["api"];
beforeAll(async () => {
  ({ target, api } = await emailWorld());
});
afterAll(async () => target?.close());

it("copies of one message composed together share one decoded buffer per attachment; a copy composed after them decodes its own", async () => {
  const service = target.service!;
  const bytes = Buffer.alloc(256 * 1024, "report ");
  const to = ["a", "b", "c"].map((l) => `delivered+${l}${Date.now().toString(36)}@simulator.test`);
  const sent = await expectStatus(
    api().POST("/v1/emails", {
      body: {
        from: "receipts@shop.example.com",
        to,
        subject: "Report",
        text: "Attached.",
        attachments: [{ filename: "report.txt", contentType: "text/plain", content: bytes.toString("base64") }],
      },
    }),
    202,
    "send",
  );
  // The dispatcher sends them first; what follows composes them again, with nothing else in flight.
  await target.settle();
  const caller = (await service.deps.apiKeys.authenticate(target.apiKey))!;
  const copies: RecipientRow[] = (await service.deps.messages.read(sent.id, caller.test)).recipients;
  const { renderer } = service.deps;
  const contentOf = (outgoing: OutgoingCopy) => (outgoing.mail.attachments as Array<{ content: unknown }>)[0]!.content;

  // The first two copies are composed while each other's send is still running.
  let release!: () => void;
  const sending = new Promise<void>((resolve) => (release = resolve));
  const seen: unknown[] = [];
  const inFlight = copies.slice(0, 2).map((copy) =>
    renderer.compose(copy, async (outgoing) => {
      seen.push(contentOf(outgoing));
      await sending;
    }),
  );
  while (seen.length < 2) await new Promise((r) => setImmediate(r));
  expect(renderer.held()).toBe(1);
  release();
  await Promise.all(inFlight);
  expect(Buffer.isBuffer(seen[0])).toBe(true);
  expect(seen[0]).toEqual(bytes);
  expect(seen[1]).toBe(seen[0]);
  expect(renderer.held()).toBe(0);

  // Nothing of the message is kept once its copies are done: the next one loads it again.
  const later = await renderer.compose(copies[2]!, async (outgoing) => contentOf(outgoing));
  expect(later).toEqual(bytes);
  expect(later).not.toBe(seen[0]);
});
