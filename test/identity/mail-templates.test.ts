/**
 * X-ID-MAIL-3: identity's mail templates (handlers/identity/mail/templates.ts): the language a
 * message is rendered in, escaping, branding and the refusal of a template that lacks a value.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createMailRenderer } from "../../handlers/identity/mail/templates.ts";

describe("identity mail templates", () => {
  const render = createMailRenderer();

  it("X-ID-MAIL-3 every built-in template renders in English, subject, text and framed HTML", () => {
    const values = { link: "https://id.example/x", expiresMinutes: 15, email: "a@example.com", sentAt: "now" };
    for (const template of ["test-message", "password-reset", "email-verification"] as const) {
      const m = render({ template, locale: undefined, values });
      expect(m.locale).toBe("en");
      expect(m.subject).not.toMatch(/\{\{|\n/);
      expect(m.text).not.toContain("{{");
      expect(m.html).toMatch(/^<!doctype html>/);
    }
  });

  it("X-ID-MAIL-3 a language folder is chosen by the nearest tag, else English; adding one is adding files", () => {
    const root = mkdtempSync(join(tmpdir(), "mail-templates-"));
    for (const [lang, subject] of [
      ["en", "Hello {{applicationName}}"],
      ["fr", "Bonjour {{applicationName}}"],
    ]) {
      mkdirSync(join(root, lang!));
      writeFileSync(join(root, lang!, "test-message.subject.txt"), subject!);
      writeFileSync(join(root, lang!, "test-message.txt"), "{{sentAt}}");
      writeFileSync(join(root, lang!, "test-message.html"), "<p>{{sentAt}}</p>");
    }
    const french = createMailRenderer(root);
    expect(french({ template: "test-message", locale: "fr-CA", values: { sentAt: "x" } })).toMatchObject({
      locale: "fr",
      subject: "Bonjour Identity",
    });
    expect(french({ template: "test-message", locale: "de", values: { sentAt: "x" } })).toMatchObject({
      locale: "en",
      subject: "Hello Identity",
    });
    expect(french({ template: "test-message", locale: "../../../etc", values: { sentAt: "x" } }).locale).toBe("en");
  });

  it("X-ID-MAIL-3 values are escaped in HTML, kept in text, on one line in the subject; branding is strict", () => {
    const m = render({
      template: "password-reset",
      locale: "en",
      values: { link: "https://x.example/?a=1&b=<i>", expiresMinutes: 15 },
      application: { name: "Evil\r\nBcc: x <b>", branding: { logoUrl: "javascript:alert(1)", primaryColor: "red;background:url(x)" } },
    });
    expect(m.html).toContain("https://x.example/?a=1&amp;b=&lt;i&gt;");
    expect(m.html).not.toContain("<i>");
    expect(m.html).not.toContain("javascript:");
    expect(m.html).not.toContain("url(x)");
    expect(m.text).toContain("https://x.example/?a=1&b=<i>");
    expect(m.subject).not.toMatch(/[\r\n]/);
  });

  it("X-ID-MAIL-3 a template whose value is missing is refused, not sent with a hole", () => {
    expect(() => render({ template: "password-reset", locale: "en", values: { expiresMinutes: 15 } })).toThrow(/no value for \{\{link\}\}/);
  });
});
