/**
 * text-parts.ts: a large part encoded in pieces decodes to exactly what nodemailer's own encoding of
 * the same part decodes to (mailparser reads both), with lines of at most 76 characters (RFC 2045),
 * whatever falls on a piece's edge: a space, CRLF, an escaped byte, a character outside the BMP.
 */
import { simpleParser } from "mailparser";
import { describe, expect, it } from "vitest";
import { composeCopy, renderCopy } from "../../handlers/email/mail/compose.ts";
import { encodeTextPart, LARGE_PART_CHARS } from "../../handlers/email/mail/text-parts.ts";

const now = <T>(job: () => T) => Promise.resolve(job());
const copy = (html: Parameters<typeof composeCopy>[0]["html"], text?: Parameters<typeof composeCopy>[0]["text"]) =>
  composeCopy({
    from: "receipts@acme.test",
    to: "ada@example.net",
    subject: "Catalogue",
    html,
    text,
    messageId: "<c1@acme.test>",
    returnPath: "bounces+t@bounces.acme.test",
    date: new Date("2026-11-28T00:00:00Z"),
  });
const read = async (c: ReturnType<typeof copy>) => {
  const mime = await renderCopy(c);
  return { mime: mime.toString("latin1"), parsed: await simpleParser(mime) };
};

const samples: Record<string, string> = {
  "one line of links, no line break": `<p>${Array.from({ length: 5000 }, (_, i) => `<a href="https://x.co/${i}">.</a>`).join("")}</p>`,
  "CRLF lines, spaces before the breaks and at the pieces' edges": Array.from(
    { length: 6000 },
    (_, i) => `line ${i} ${" ".repeat(i % 5)}`,
  ).join("\r\n"),
  "escapes (=, é, €) and a character outside the BMP everywhere": "a=b é € 😀 ".repeat(12000),
  "long lines of dots": `${".".repeat(20000)}\r\n`.repeat(5),
  "mostly Cyrillic (base64, as nodemailer chooses)": "Привет, мир! ".repeat(9000),
};

describe("a large part encoded in pieces", () => {
  for (const [name, body] of Object.entries(samples)) {
    it(`decodes as nodemailer's own encoding does: ${name}`, async () => {
      expect(body.length).toBeGreaterThanOrEqual(LARGE_PART_CHARS);
      const html = await encodeTextPart("text/html; charset=utf-8", body, now);
      const text = await encodeTextPart("text/plain; charset=utf-8", body, now);
      const ours = await read(copy(html, text));
      const theirs = await read(copy(body, body));
      expect(ours.parsed.html).toBe(theirs.parsed.html);
      expect(ours.parsed.text).toBe(theirs.parsed.text);
      for (const line of ours.mime.split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
      expect(html.raw).toMatch(/^Content-Type: text\/html; charset=utf-8\r\nContent-Transfer-Encoding: (quoted-printable|base64)\r\n\r\n/);
    });
  }

  it("chooses quoted-printable for Latin text and base64 for the rest, as nodemailer does", async () => {
    expect((await encodeTextPart("text/plain", samples["one line of links, no line break"]!, now)).raw).toMatch(/quoted-printable/);
    expect((await encodeTextPart("text/plain", samples["mostly Cyrillic (base64, as nodemailer chooses)"]!, now)).raw).toMatch(/base64/);
  });

  it("runs its work as many small jobs, none of them the whole part", async () => {
    const sizes: number[] = [];
    const body = samples["one line of links, no line break"]!;
    await encodeTextPart("text/html", body, async (job) => {
      const result = job();
      sizes.push(typeof result === "string" ? result.length : 0);
      return result;
    });
    expect(sizes.length).toBeGreaterThan(10);
    expect(Math.max(...sizes)).toBeLessThan(body.length / 4);
  });
});
