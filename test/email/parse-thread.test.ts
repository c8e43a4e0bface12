/**
 * parse-thread.ts: the email service's parsing off the event loop. The thread loads html-plan.ts and
 * reports.ts through Node's type stripping and gives the same answers as the modules run here; a
 * thread that dies fails what it held, and the next request starts another.
 */
import { afterAll, describe, expect, it } from "vitest";
import { planHtml } from "../../handlers/email/mail/html-plan.ts";
import { createParseThread } from "../../handlers/email/mail/parse-thread.ts";
import { parseReport } from "../../handlers/email/mail/reports.ts";

const thread = createParseThread();
afterAll(() => thread.close());

const dsn = [
  "From: MAILER-DAEMON@mx.example.net",
  "MIME-Version: 1.0",
  'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
  "",
  "--b",
  "Content-Type: text/plain",
  "",
  "Undeliverable.",
  "--b",
  "Content-Type: message/delivery-status",
  "",
  "Reporting-MTA: dns; mx.example.net",
  "",
  "Final-Recipient: rfc822; ada@example.net",
  "Action: failed",
  "Status: 5.1.1",
  "",
  "--b--",
  "",
].join("\r\n");

describe("the parsing thread", () => {
  it("plans HTML as planHtml does here, the offsets in a typed array, at most maxLinks destinations", async () => {
    const html =
      '<html><body><a href="https://a.test/">a</a><a href="https://b.test/">b</a><a href="https://a.test/">again</a></body></html>';
    const there = await thread.planHtml(html, 1);
    expect(there.spans).toBeInstanceOf(Uint32Array);
    expect(there).toEqual(planHtml(html, 1));
    expect(there.urls).toEqual(["https://a.test/"]);
  });

  it("reads a report as parseReport does here, from a Buffer that shares Node's pool", async () => {
    const raw = Buffer.from(dsn);
    expect(raw.buffer.byteLength).toBeGreaterThan(raw.length); // a slice of the pool: copied over, never transferred
    expect(await thread.parseReport(raw)).toEqual(await parseReport(raw));
    expect(raw.toString()).toBe(dsn);
  });

  it("a thread that dies fails the requests it held; the next request starts a new one", async () => {
    const held = thread.planHtml(`<p>${"<a href='https://a.test/'>x</a>".repeat(20000)}</p>`, 1000);
    const closing = thread.close();
    // Asked before the old thread's exit is seen: the new thread answers it.
    const next = thread.planHtml('<a href="https://c.test/">c</a>', 10);
    await closing;
    await expect(held).rejects.toThrow(/parsing thread exited/);
    expect((await next).urls).toEqual(["https://c.test/"]);
  });
});
