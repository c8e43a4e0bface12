/**
 * The whole product path to a real relay: POST /v1/emails → the outbox → the dispatcher →
 * nodemailer's pool → an SMTP relay (smtp-server, in process, on 127.0.0.1) → the outcome in the
 * record, the suppression list and the webhooks. What the relay received is read as MIME
 * (mailparser), its DKIM signature is checked by an independent verifier (mailauth) against the
 * DNS record that `npm run admin -- email dkim-keygen` printed, and its tracking URLs are followed
 * through the service. The relay's answers per recipient are chosen by the test: 250, 452, 550
 * 5.1.1, 550 5.7.26 at the end of DATA. Time (the retry schedule) is the service's ManualClock.
 *
 * Kept out of here because covered elsewhere: the mapping of every reply by the transport alone
 * (mail/transport.test.ts), the simulator's outcomes through the API (conformance/email).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dkimVerify } from "mailauth/lib/dkim/verify.js";
import { simpleParser, type ParsedMail } from "mailparser";
import { createTransport } from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../../conformance/harness/http.ts";
import { emailTarget, type EmailTarget } from "../../conformance/harness/targets.ts";
import { startReceiver, type Receiver } from "../../conformance/identity/webhooks-fixtures.ts";
import { DEFAULT_RETRY_DELAYS_MS } from "../../handlers/email/domain/outbound.ts";
import { headerOf, startCaptureServer, type CaptureServer, type Received } from "./mail/helpers.ts";

const DOMAIN = "acme.test";
const SELECTOR = "em2026";
// What a tracking origin in front of the service looks like (EMAIL_TRACKING_BASE_URL); the test
// plays the reverse proxy and sends the path to the service.
const TRACKING_BASE = "https://t.acme.test";

/** The relay's answer per recipient, decided by the test; null accepts. */
type Answer = { code: number; message: string } | null;
const atRcpt = new Map<string, Answer>();
const atData = new Map<string, Answer>();
/** Every RCPT the relay saw, accepted or not (the capture server records only accepted messages). */
const rcptSeen: string[] = [];

let relay: CaptureServer;
let target: EmailTarget;
let webhooks: Receiver;
let dir: string;
let dnsTxt: { name: string; strings: string[] };

const call = (method: string, path: string, json?: unknown) =>
  request(target.url, method, path, { token: target.apiKey, ...(json === undefined ? {} : { json }) });
const send = (body: Record<string, unknown>) =>
  call("POST", "/v1/emails", { from: `receipts@${DOMAIN}`, subject: "Your receipt", text: "Thanks.", ...body });
const record = async (id: string) => (await call("GET", `/v1/emails/${id}`)).body;
const receivedBy = (address: string): Received[] => relay.received.filter((m) => m.rcptTo.includes(address));
/** The events the webhook receiver got for one message, in arrival order. */
const eventsFor = (emailId: string) => webhooks.received.map((r) => r.json).filter((e) => e.data.id === emailId);
/** A tracking URL as a mail client sees it, fetched through the "proxy" (its path, on the service). */
const viaProxy = (url: string) => {
  const u = new URL(url);
  expect(u.origin).toBe(TRACKING_BASE);
  return fetch(`${target.url}${u.pathname}${u.search}`, { redirect: "manual" });
};

/** The TXT strings of a zone-file line as the admin command prints it: `name. IN TXT ( "…" "…" )`. */
function parseZoneLine(line: string): { name: string; strings: string[] } {
  const m = /^(\S+)\.\s+IN\s+TXT\s+\(\s*((?:"[^"]*"\s*)+)\)$/.exec(line.trim());
  if (!m) throw new Error(`not a TXT zone line: ${line}`);
  return { name: m[1]!, strings: [...m[2]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!) };
}

/** A DNS resolver for mailauth that knows one TXT record and nothing else (no network). */
const resolver = async (name: string, rrtype: string) => {
  if (rrtype === "TXT" && name === dnsTxt.name) return [dnsTxt.strings];
  throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: "ENOTFOUND" });
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "email-e2e-"));
  // The documented way to make the key: the admin command writes it and prints the DNS record.
  const keyFile = join(dir, "dkim.pem");
  const printed = execFileSync(process.execPath, ["--import", "tsx", "app/admin.ts", "email", "dkim-keygen", DOMAIN, SELECTOR, keyFile], {
    cwd: join(import.meta.dirname, "../.."),
    encoding: "utf8",
  });
  dnsTxt = parseZoneLine(printed.split("\n").find((l) => l.includes(" IN TXT "))!);
  expect(dnsTxt.name).toBe(`${SELECTOR}._domainkey.${DOMAIN}`);

  relay = await startCaptureServer({
    rcpt: (address) => {
      rcptSeen.push(address);
      return atRcpt.get(address) ?? null;
    },
    data: (m) => atData.get(m.rcptTo[0]!) ?? null,
  });
  target = await emailTarget({
    env: {
      EMAIL_SMTP_URL: `smtp://127.0.0.1:${relay.port}`,
      EMAIL_SENDING_DOMAINS: DOMAIN,
      EMAIL_DKIM_DOMAIN: DOMAIN,
      EMAIL_DKIM_SELECTOR: SELECTOR,
      EMAIL_DKIM_PRIVATE_KEY_FILE: keyFile,
      EMAIL_TRACKING_BASE_URL: TRACKING_BASE,
    },
  });
  webhooks = await startReceiver(undefined, "email-webhooks");
  const hook = await call("POST", "/v1/webhooks", {
    url: webhooks.url,
    events: ["email.delivered", "email.bounced", "email.opened", "email.clicked"],
  });
  expect(hook.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await target?.close();
  await webhooks?.close();
  await relay?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("API → outbox → nodemailer → SMTP relay", () => {
  const html =
    '<p>Thanks for your order. <a href="https://shop.acme.test/orders/1042?x=1&amp;y=2">View your receipt</a>, ' +
    '<a href="mailto:support@acme.test">write to us</a> or <a href="https://shop.acme.test/help" data-no-track>get help</a>.</p>';
  const attachment = Buffer.from("%PDF-1.4\n% a receipt\n\u00ff\u0000binary tail", "latin1");
  let id: string;
  let parsed: Map<string, { raw: Buffer; mail: ParsedMail; envelopeFrom: string }>;

  beforeAll(async () => {
    const sent = await send({
      fromName: "Acme Receipts",
      to: ["ada@example.net", "bob@example.net"],
      replyTo: ["support@acme.test"],
      subject: "Your receipt for order #1042 – ✓",
      html,
      headers: { "X-Campaign": "spring-2026", "List-Unsubscribe": "<mailto:unsubscribe@acme.test>" },
      attachments: [{ filename: "receipt.pdf", contentType: "application/pdf", content: attachment.toString("base64") }],
      metadata: { orderId: "1042" },
      tracking: { opens: true, clicks: true },
    });
    expect(sent.status).toBe(202);
    id = sent.body.id;
    await target.settle();
    parsed = new Map();
    for (const to of ["ada@example.net", "bob@example.net"]) {
      const got = receivedBy(to);
      expect(got, `copies of ${to} at the relay`).toHaveLength(1);
      parsed.set(to, { raw: got[0]!.raw, mail: await simpleParser(got[0]!.raw), envelopeFrom: got[0]!.mailFrom });
    }
  });

  it("X-EM-16 a 250 from the relay: each copy Delivered with the relay's reply, email.delivered to the webhook", async () => {
    const got = await record(id);
    expect(got.status).toBe("Delivered");
    for (const r of got.recipients) {
      expect(r).toMatchObject({ status: "Delivered", transport: "smtp", attempts: 1, smtpResponse: expect.stringMatching(/^250 /) });
    }
    expect(got.events.filter((e: { type: string }) => e.type === "email.delivered")).toHaveLength(2);
    const delivered = eventsFor(id).filter((e) => e.type === "email.delivered");
    expect(delivered.map((e) => e.data.toEmail).sort()).toEqual(["ada@example.net", "bob@example.net"]);
    for (const e of delivered) expect(e.data).toMatchObject({ status: "Delivered", metadata: { orderId: "1042" } });
  });

  it("X-EM-13 X-EM-20 X-EM-3 the MIME the relay received: one copy per recipient with the record's headers, Reply-To, custom headers and the attachment", async () => {
    const got = await record(id);
    const ids = new Set<string>();
    for (const r of got.recipients as Array<{ email: string; messageId: string }>) {
      const { mail, raw } = parsed.get(r.email)!;
      expect(mail.from?.value).toEqual([{ address: `receipts@${DOMAIN}`, name: "Acme Receipts" }]);
      expect(mail.from!.value[0]!.address).toBe(got.from);
      // Only this recipient in To:, as if BCC (X-EM-13); no Cc.
      expect(mail.to && !Array.isArray(mail.to) ? mail.to.value.map((a) => a.address) : null).toEqual([r.email]);
      expect(mail.cc).toBeUndefined();
      expect(mail.subject).toBe(got.subject);
      expect(mail.subject).toBe("Your receipt for order #1042 – ✓");
      expect(mail.messageId).toBe(r.messageId);
      expect(headerOf(raw, "Message-ID")).toBe(r.messageId);
      ids.add(r.messageId);
      expect(mail.replyTo?.value.map((a) => a.address)).toEqual(["support@acme.test"]);
      expect(headerOf(raw, "X-Campaign")).toBe("spring-2026");
      expect(headerOf(raw, "List-Unsubscribe")).toBe("<mailto:unsubscribe@acme.test>");
      expect(headerOf(raw, "X-Mailer")).toBeUndefined();
      expect(mail.attachments).toHaveLength(1);
      const a = mail.attachments[0]!;
      expect([a.filename, a.contentType, a.contentDisposition]).toEqual(["receipt.pdf", "application/pdf", "attachment"]);
      expect(a.content.equals(attachment)).toBe(true);
      expect(mail.date?.toISOString()).toBe(new Date(got.createdAt).toISOString().replace(/\.\d{3}Z$/, ".000Z"));
    }
    expect(ids.size).toBe(2);
  });

  it("X-EM-17 the envelope sender (Return-Path) of each copy is its own VERP bounce address on the bounce domain", () => {
    const froms = [...parsed.values()].map((p) => p.envelopeFrom);
    for (const from of froms) expect(from).toMatch(new RegExp(`^bounces\\+[a-z2-7]{26}@bounces\\.${DOMAIN.replace(".", "\\.")}$`));
    expect(new Set(froms).size).toBe(2);
    // The sender does not write Return-Path itself: the final MTA adds it from MAIL FROM (RFC 5321 §4.4).
    for (const p of parsed.values()) expect(headerOf(p.raw, "Return-Path")).toBeUndefined();
  });

  it("DKIM: the relay's bytes verify with mailauth against the record the admin command printed; d= is the From domain; the relay's bytes altered do not", async () => {
    for (const { raw } of parsed.values()) {
      const result = await dkimVerify(raw, { resolver });
      expect(result.results).toHaveLength(1);
      const r = result.results[0]!;
      expect(r.status.result).toBe("pass");
      expect([r.signingDomain, r.selector]).toEqual([DOMAIN, SELECTOR]);
      expect(r.status.aligned).toBe(DOMAIN); // DMARC alignment with the From domain
      const signed = String(r.signingHeaders?.keys).toLowerCase().split(/:\s*/);
      expect(signed).toEqual(expect.arrayContaining(["from", "to", "subject", "reply-to", "message-id", "date"]));
      const altered = Buffer.from(
        raw
          .toString("latin1")
          .replace("spring-2026", "spring-2027")
          .replace(/^Subject: /m, "Subject: Re: "),
        "latin1",
      );
      expect((await dkimVerify(altered, { resolver })).results[0]!.status.result).toBe("fail");
    }
  });

  it("EM-10 X-EM-8 the relayed HTML carries the open pixel and rewritten links on the tracking origin; following them records the open and the click and redirects to the original link", async () => {
    const { mail } = parsed.get("ada@example.net")!;
    const body = String(mail.html);
    const rendered = (await call("GET", `/v1/emails/${id}/recipients/ada@example.net/content`)).body;
    // What the relay got is exactly the rendered copy of the record.
    expect(body.trim()).toBe(rendered.html.trim());
    const hrefs = [...body.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!.replaceAll("&amp;", "&"));
    expect(hrefs).toHaveLength(3);
    expect(hrefs[0]).toMatch(new RegExp(`^${TRACKING_BASE}/v1/track/click/[A-Za-z0-9_-]{22,}$`));
    expect(hrefs[1]).toBe("mailto:support@acme.test");
    expect(hrefs[2]).toBe("https://shop.acme.test/help");
    expect(body).not.toContain("https://shop.acme.test/orders/1042");
    const pixel = /<img[^>]+src="([^"]+)"/.exec(body)?.[1];
    expect(pixel).toMatch(new RegExp(`^${TRACKING_BASE}/v1/track/open/[A-Za-z0-9_-]{22,}$`));
    expect(pixel).toBe(rendered.openTrackingUrl);
    // Bob's copy has tokens of its own.
    const bobBody = String(parsed.get("bob@example.net")!.mail.html);
    expect(bobBody).not.toContain(pixel);
    expect(bobBody).not.toContain(hrefs[0]);

    const open = await viaProxy(pixel!);
    expect(open.status).toBe(200);
    expect(open.headers.get("content-type")).toBe("image/gif");
    const click = await viaProxy(hrefs[0]!);
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.acme.test/orders/1042?x=1&y=2");

    await target.settle();
    const got = await record(id);
    const ada = got.recipients.find((r: { email: string }) => r.email === "ada@example.net");
    expect(ada.openedAt).toBeDefined();
    expect(ada.clickedAt).toBeDefined();
    const events = eventsFor(id)
      .filter((e) => e.data.toEmail === "ada@example.net")
      .map((e) => e.type);
    expect(events).toEqual(expect.arrayContaining(["email.opened", "email.clicked"]));
    expect(eventsFor(id).find((e) => e.type === "email.clicked").data.url).toBe("https://shop.acme.test/orders/1042?x=1&y=2");
  });
  it("X-EM-17 EM-8 a DSN the remote MTA mails later to one copy's return path moves that copy, and only it, from Delivered to Bounced", async () => {
    const bob = parsed.get("bob@example.net")!;
    // Written by hand as Postfix writes them (RFC 3464 in an RFC 6522 multipart/report), independent of the simulator's builder.
    const dsn = [
      "From: MAILER-DAEMON@mx.example.net (Mail Delivery System)",
      `To: ${bob.envelopeFrom}`,
      "Subject: Undelivered Mail Returned to Sender",
      "Auto-Submitted: auto-replied",
      "MIME-Version: 1.0",
      'Content-Type: multipart/report; report-type=delivery-status; boundary="B0"',
      "",
      "--B0",
      "Content-Type: text/plain",
      "",
      "<bob@example.net>: mailbox disabled",
      "--B0",
      "Content-Type: message/delivery-status",
      "",
      "Reporting-MTA: dns; mx.example.net",
      "",
      "Final-Recipient: rfc822; bob@example.net",
      "Action: failed",
      "Status: 5.2.1",
      "Diagnostic-Code: smtp; 550 5.2.1 <bob@example.net>: mailbox disabled",
      "",
      "--B0",
      "Content-Type: text/rfc822-headers",
      "",
      `Message-ID: ${bob.mail.messageId}`,
      "--B0--",
      "",
    ].join("\r\n");
    const mta = createTransport({ host: "127.0.0.1", port: target.service!.inbound.port, ignoreTLS: true });
    await mta.sendMail({ envelope: { from: "", to: [bob.envelopeFrom] }, raw: dsn });
    mta.close();
    await target.settle();
    const got = await record(id);
    const [ada, bobCopy] = ["ada@example.net", "bob@example.net"].map((a) => got.recipients.find((r: { email: string }) => r.email === a));
    expect(ada.status).toBe("Delivered");
    expect(bobCopy).toMatchObject({
      status: "Bounced",
      bounceType: "hard",
      smtpStatus: "5.2.1",
      errorMessage: "550 5.2.1 <bob@example.net>: mailbox disabled",
    });
    expect(got.status).toBe("Bounced");
    expect(
      eventsFor(id)
        .filter((e) => e.type === "email.bounced")
        .map((e) => e.data.toEmail),
    ).toEqual(["bob@example.net"]);
    expect((await call("GET", "/v1/suppressions/bob@example.net")).body).toMatchObject({ reason: "hard_bounce", messageId: id });
  });
});

describe("the relay's refusals through the product path", () => {
  it("EM-8 X-EM-16 550 5.1.1 at RCPT: Bounced hard with the relay's text, email.bounced, the recipient suppressed and not mailed again", async () => {
    const to = "gone@example.net";
    atRcpt.set(to, { code: 550, message: "5.1.1 <gone@example.net>: Recipient address rejected: User unknown in virtual mailbox table" });
    const sent = await send({ to: [to] });
    await target.settle();
    const got = await record(sent.body.id);
    expect(got.status).toBe("Bounced");
    expect(got.recipients[0]).toMatchObject({
      status: "Bounced",
      bounceType: "hard",
      smtpStatus: "5.1.1",
      attempts: 1,
      transport: "smtp",
      errorMessage: "550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown in virtual mailbox table",
    });
    expect(got.errorMessage).toBe(got.recipients[0].errorMessage);
    expect(receivedBy(to)).toHaveLength(0);
    const bounced = eventsFor(sent.body.id).find((e) => e.type === "email.bounced");
    expect(bounced.data).toMatchObject({
      toEmail: to,
      status: "Bounced",
      bounceType: "hard",
      smtpStatus: "5.1.1",
      errorMessage: got.recipients[0].errorMessage,
    });
    const suppression = await call("GET", `/v1/suppressions/${to}`);
    expect(suppression.body).toMatchObject({ reason: "hard_bounce", messageId: sent.body.id });
    const again = await send({ to: [to] });
    expect(again.status).toBe(422);
    expect(again.body.code).toBe("recipient_suppressed");
    expect(rcptSeen.filter((a) => a === to)).toHaveLength(1);
  });

  it("X-EM-16 550 5.7.26 at the end of DATA (a policy rejection about the sender): Bounced soft, NOT suppressed, the address can be mailed again", async () => {
    const to = "strict@example.net";
    atData.set(to, { code: 550, message: "5.7.26 Unauthenticated email from acme.test is not accepted due to domain's DMARC policy." });
    const sent = await send({ to: [to] });
    await target.settle();
    const got = await record(sent.body.id);
    expect(got.recipients[0]).toMatchObject({
      status: "Bounced",
      bounceType: "soft",
      smtpStatus: "5.7.26",
      errorMessage: "550 5.7.26 Unauthenticated email from acme.test is not accepted due to domain's DMARC policy.",
    });
    expect(eventsFor(sent.body.id).find((e) => e.type === "email.bounced").data).toMatchObject({
      bounceType: "soft",
      smtpStatus: "5.7.26",
    });
    expect((await call("GET", `/v1/suppressions/${to}`)).status).toBe(404);
    atData.delete(to); // the sender fixed its DMARC set-up
    const again = await send({ to: [to] });
    expect(again.status).toBe(202);
    await target.settle();
    expect((await record(again.body.id)).status).toBe("Delivered");
    expect(receivedBy(to)).toHaveLength(1);
  });

  it("X-EM-16 452 at RCPT: Queued again, retried on the schedule of the service clock (not before), delivered once the relay accepts", async () => {
    const to = "busy@example.net";
    const attempts = () => rcptSeen.filter((a) => a === to).length;
    atRcpt.set(to, { code: 452, message: "4.2.2 Mailbox full, try again later" });
    const sent = await send({ to: [to] });
    await target.settle();
    let got = await record(sent.body.id);
    expect(got.recipients[0]).toMatchObject({
      status: "Queued",
      attempts: 1,
      smtpResponse: "452 4.2.2 Mailbox full, try again later",
      smtpStatus: "4.2.2",
    });
    expect(got.events.map((e: { type: string }) => e.type)).toEqual(["email.queued", "email.sent", "email.deferred"]);
    expect(attempts()).toBe(1);

    // Backoff: 1 min after the first attempt, then 5 min after the second (X-EM-16).
    expect(DEFAULT_RETRY_DELAYS_MS.slice(0, 2)).toEqual([60_000, 300_000]);
    target.clock!.advance(59_000);
    await target.settle();
    expect(attempts()).toBe(1);
    target.clock!.advance(1_000);
    await target.settle();
    expect(attempts()).toBe(2);
    got = await record(sent.body.id);
    expect(got.recipients[0]).toMatchObject({ status: "Queued", attempts: 2 });

    atRcpt.delete(to); // the mailbox has room again
    target.clock!.advance(299_000);
    await target.settle();
    expect(attempts()).toBe(2);
    target.clock!.advance(1_000);
    await target.settle();
    expect(attempts()).toBe(3);
    got = await record(sent.body.id);
    expect(got.status).toBe("Delivered");
    expect(got.recipients[0]).toMatchObject({ status: "Delivered", attempts: 3, smtpResponse: expect.stringMatching(/^250 /) });
    expect(receivedBy(to)).toHaveLength(1);
    expect(eventsFor(sent.body.id).map((e) => e.type)).toEqual(["email.delivered"]);
  });
});
