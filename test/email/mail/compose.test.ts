/** compose.ts: one recipient's copy, checked on the bytes an SMTP server receives. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTransport } from "nodemailer";
import { simpleParser } from "mailparser";
import {
  composeCopy,
  newMessageId,
  newTrackingToken,
  newVerpToken,
  parseVerpAddress,
  renderCopy,
  verpAddress,
  type CopyInput,
} from "../../../handlers/email/mail/compose.ts";
import { headerOf, startCaptureServer, type CaptureServer } from "./helpers.ts";

const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");

function input(overrides: Partial<CopyInput> = {}): CopyInput {
  return {
    from: "receipts@acme.test",
    fromName: "Acme Receipts, Inc.",
    to: "ada@example.com",
    replyTo: ["support@acme.test", "billing@acme.test"],
    subject: "Your receipt – №42",
    text: "Thanks for your order.",
    html: '<p>Thanks for your order.</p><img src="cid:logo@acme">',
    headers: { "X-Entity-Ref-ID": "order-42", "List-Unsubscribe": "<https://acme.test/u/1>" },
    attachments: [
      { filename: "receipt.txt", contentType: "text/plain", content: Buffer.from("total: 42").toString("base64") },
      { filename: "logo.png", contentType: "image/png", content: PNG, contentId: "logo@acme" },
    ],
    messageId: "<0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@acme.test>",
    returnPath: verpAddress("abcdefghijklmnopqrstuvwxyz", "bounces.acme.test"),
    feedbackId: "msg42:key1:transactional:acme",
    ...overrides,
  };
}

describe("composeCopy over SMTP", () => {
  let server: CaptureServer;
  beforeAll(async () => {
    server = await startCaptureServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("sends one copy: VERP envelope sender, one RCPT, To shows only that recipient, every field in place", async () => {
    const copy = composeCopy(input());
    const transport = createTransport({ host: "127.0.0.1", port: server.port, ignoreTLS: true });
    try {
      await transport.sendMail(copy.mail);
    } finally {
      transport.close();
    }
    const got = await server.next();
    expect(got.mailFrom).toBe("bounces+abcdefghijklmnopqrstuvwxyz@bounces.acme.test");
    expect(got.rcptTo).toEqual(["ada@example.com"]);

    const parsed = await simpleParser(got.raw);
    expect(parsed.from?.value).toEqual([{ name: "Acme Receipts, Inc.", address: "receipts@acme.test" }]);
    expect(headerOf(got.raw, "To")).toBe("ada@example.com");
    expect(headerOf(got.raw, "Cc")).toBeUndefined();
    expect(headerOf(got.raw, "Bcc")).toBeUndefined();
    expect(parsed.replyTo?.value.map((a) => a.address)).toEqual(["support@acme.test", "billing@acme.test"]);
    expect(parsed.subject).toBe("Your receipt – №42");
    expect(parsed.messageId).toBe("<0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@acme.test>");
    expect(headerOf(got.raw, "Feedback-ID")).toBe("msg42:key1:transactional:acme");
    expect(headerOf(got.raw, "X-Entity-Ref-ID")).toBe("order-42");
    expect(headerOf(got.raw, "List-Unsubscribe")).toBe("<https://acme.test/u/1>");
    expect(headerOf(got.raw, "X-Mailer")).toBeUndefined();
    expect(headerOf(got.raw, "Date")).toBeDefined();
    expect(parsed.text?.trim()).toBe("Thanks for your order.");
    expect(parsed.html).toContain("<p>Thanks for your order.</p>");
    expect(String(headerOf(got.raw, "Content-Type"))).toMatch(/^multipart\/mixed/);
    expect(got.raw.toString()).toMatch(/Content-Type: multipart\/alternative/);
    expect(got.raw.toString()).toMatch(/Content-Type: multipart\/related/);

    const receipt = parsed.attachments.find((a) => a.filename === "receipt.txt")!;
    expect(receipt.content.toString()).toBe("total: 42");
    expect(receipt.contentDisposition).toBe("attachment");
    const logo = parsed.attachments.find((a) => a.filename === "logo.png")!;
    expect(logo.content.equals(PNG)).toBe(true);
    expect(logo.contentId).toBe("<logo@acme>");
    expect(logo.contentDisposition).toBe("inline");
  });

  it("each recipient's copy is private: a second copy names only its own recipient", async () => {
    const a = composeCopy(input({ to: "a@example.com", messageId: newMessageId("acme.test") }));
    const b = composeCopy(input({ to: "b@example.com", messageId: newMessageId("acme.test") }));
    const [ra, rb] = await Promise.all([renderCopy(a), renderCopy(b)]);
    expect(headerOf(ra, "To")).toBe("a@example.com");
    expect(headerOf(rb, "To")).toBe("b@example.com");
    expect(rb.toString()).not.toContain("a@example.com");
    expect(a.envelope).toEqual({ from: a.envelope.from, to: ["a@example.com"] });
    expect(headerOf(ra, "Message-ID")).not.toBe(headerOf(rb, "Message-ID"));
  });

  it("a plain message without name, reply-to, html or attachments is a single text part", async () => {
    const copy = composeCopy({
      from: "a@acme.test",
      to: "b@example.com",
      subject: "Hi",
      text: "Hello",
      messageId: "<1@acme.test>",
      returnPath: "bounces+x@b.test",
    });
    const raw = await renderCopy(copy);
    expect(headerOf(raw, "From")).toBe("a@acme.test");
    expect(headerOf(raw, "Reply-To")).toBeUndefined();
    expect(headerOf(raw, "Feedback-ID")).toBeUndefined();
    expect(String(headerOf(raw, "Content-Type"))).toMatch(/^text\/plain/);
  });

  it("refuses header injection whatever upstream promised", () => {
    expect(() => composeCopy(input({ subject: "Hi\r\nBcc: victim@example.com" }))).toThrow(TypeError);
    expect(() => composeCopy(input({ headers: { "X-A": "v\r\nBcc: victim@example.com" } }))).toThrow(TypeError);
    expect(() => composeCopy(input({ headers: { "X-A:B": "v" } }))).toThrow(TypeError);
    expect(() => composeCopy(input({ fromName: "Ada\nBcc: x" }))).toThrow(TypeError);
    expect(() => composeCopy(input({ messageId: "no-brackets@acme.test" }))).toThrow(TypeError);
  });

  it("never reads a file or a URL named in content (disableFileAccess/disableUrlAccess)", async () => {
    const copy = composeCopy(input({ attachments: [] }));
    copy.mail.attachments = [{ filename: "passwd", path: "/etc/passwd" }];
    await expect(renderCopy(copy)).rejects.toThrow();
  });
});

describe("tokens and VERP addresses", () => {
  it("VERP tokens are 26 lowercase base32 characters (128 bits) and unique", () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => newVerpToken()));
    expect(tokens.size).toBe(1000);
    for (const t of tokens) expect(t).toMatch(/^[a-z2-7]{26}$/);
  });
  it("tracking tokens are 22 base64url characters", () => {
    expect(newTrackingToken()).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
  it("parseVerpAddress takes back the token only for our bounce domain", () => {
    const token = newVerpToken();
    expect(parseVerpAddress(verpAddress(token, "Bounces.Acme.test"), "bounces.acme.test")).toBe(token);
    expect(parseVerpAddress(`bounces+${token}@other.test`, "bounces.acme.test")).toBeNull();
    expect(parseVerpAddress(`fbl@bounces.acme.test`, "bounces.acme.test")).toBeNull();
    expect(parseVerpAddress(`bounces+short@bounces.acme.test`, "bounces.acme.test")).toBeNull();
    expect(parseVerpAddress(`bounces+${token}+x@bounces.acme.test`, "bounces.acme.test")).toBeNull();
  });
});
