/** dkim.ts: configuration, key generation, and a signed copy that an independent verifier (mailauth) accepts. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTransport } from "nodemailer";
import { dkimVerify } from "mailauth/lib/dkim/verify.js";
import { composeCopy } from "../../../handlers/email/mail/compose.ts";
import { dkimOptions, generateDkimKey, loadDkimConfig, type GeneratedDkimKey } from "../../../handlers/email/mail/dkim.ts";
import { startCaptureServer, type CaptureServer } from "./helpers.ts";

/** A resolver that knows exactly one TXT record, as a zone would publish it (split strings). */
function resolverFor(name: string, txt: string) {
  return async (domain: string, type: string) => {
    if (type === "TXT" && domain === name) return [txt.match(/.{1,255}/g)!];
    throw Object.assign(new Error(`no ${type} for ${domain}`), { code: "ENOTFOUND" });
  };
}

describe("DKIM", () => {
  let key: GeneratedDkimKey;
  let dir: string;
  let server: CaptureServer;
  beforeAll(async () => {
    key = generateDkimKey({ domain: "Acme.test.", selector: "em2026" });
    dir = mkdtempSync(join(tmpdir(), "dkim-"));
    writeFileSync(join(dir, "dkim.pem"), key.privateKeyPem, { mode: 0o600 });
    server = await startCaptureServer();
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("generates an RSA 2048 key and its TXT record for <selector>._domainkey.<domain>", () => {
    expect(key.recordName).toBe("em2026._domainkey.acme.test");
    expect(key.txtRecord).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/);
    expect(key.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // the zone line splits the value into ≤ 255-octet strings that concatenate back to the record
    const strings = [...key.zoneLine.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
    expect(strings.every((s) => s.length <= 255)).toBe(true);
    expect(strings.join("")).toBe(key.txtRecord);
    expect(key.zoneLine.startsWith("em2026._domainkey.acme.test. IN TXT (")).toBe(true);
    expect(() => generateDkimKey({ domain: "acme.test", selector: "s", bits: 1024 })).toThrow(RangeError);
    expect(() => generateDkimKey({ domain: "not a domain", selector: "s" })).toThrow(RangeError);
  });

  it("reads the configuration from the environment, all or nothing, never quoting the key", () => {
    expect(loadDkimConfig({})).toEqual({ config: null, errors: [] });
    const ok = loadDkimConfig({
      EMAIL_DKIM_DOMAIN: "Acme.test",
      EMAIL_DKIM_SELECTOR: "em2026",
      EMAIL_DKIM_PRIVATE_KEY_FILE: join(dir, "dkim.pem"),
    });
    expect(ok.errors).toEqual([]);
    expect(ok.config).toEqual({ domain: "acme.test", selector: "em2026", privateKey: key.privateKeyPem });

    const partial = loadDkimConfig({ EMAIL_DKIM_DOMAIN: "acme.test" });
    expect(partial.config).toBeNull();
    expect(partial.errors.join("\n")).toMatch(/EMAIL_DKIM_SELECTOR is required[\s\S]*EMAIL_DKIM_PRIVATE_KEY_FILE is required/);

    const missing = loadDkimConfig({
      EMAIL_DKIM_DOMAIN: "acme.test",
      EMAIL_DKIM_SELECTOR: "s",
      EMAIL_DKIM_PRIVATE_KEY_FILE: join(dir, "nope.pem"),
    });
    expect(missing.errors).toEqual([`EMAIL_DKIM_PRIVATE_KEY_FILE: cannot read ${join(dir, "nope.pem")} (ENOENT)`]);

    const secret = "-----BEGIN PRIVATE KEY-----\nTOPSECRET\n-----END PRIVATE KEY-----\n";
    const garbage = loadDkimConfig(
      { EMAIL_DKIM_DOMAIN: "acme.test", EMAIL_DKIM_SELECTOR: "s", EMAIL_DKIM_PRIVATE_KEY_FILE: "k" },
      () => secret,
    );
    expect(garbage.errors).toEqual(["EMAIL_DKIM_PRIVATE_KEY_FILE: not a PEM private key"]);
    expect(JSON.stringify(garbage)).not.toContain("TOPSECRET");

    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(
      loadDkimConfig({ EMAIL_DKIM_DOMAIN: "acme.test", EMAIL_DKIM_SELECTOR: "s", EMAIL_DKIM_PRIVATE_KEY_FILE: "k" }, () => ec).errors,
    ).toEqual(["EMAIL_DKIM_PRIVATE_KEY_FILE: an RSA key is required (got ec)"]);
    expect(
      loadDkimConfig({ EMAIL_DKIM_DOMAIN: "bad domain", EMAIL_DKIM_SELECTOR: "a_b", EMAIL_DKIM_PRIVATE_KEY_FILE: join(dir, "dkim.pem") })
        .errors,
    ).toHaveLength(2);
  });

  it("a copy signed through nodemailer's dkim option verifies with mailauth, and a tampered one does not", async () => {
    const config = loadDkimConfig({
      EMAIL_DKIM_DOMAIN: "acme.test",
      EMAIL_DKIM_SELECTOR: "em2026",
      EMAIL_DKIM_PRIVATE_KEY_FILE: join(dir, "dkim.pem"),
    }).config!;
    const copy = composeCopy({
      from: "receipts@acme.test",
      fromName: "Acme",
      to: "ada@example.com",
      subject: "Signed – ✓",
      text: "Hello",
      html: "<p>Hello</p>",
      headers: { "X-Entity-Ref-ID": "42" },
      attachments: [{ filename: "a.txt", contentType: "text/plain", content: Buffer.from("A").toString("base64") }],
      messageId: "<dkim-1@acme.test>",
      returnPath: "bounces+abcdefghijklmnopqrstuvwxyz@bounces.acme.test",
    });
    const transport = createTransport({ host: "127.0.0.1", port: server.port, ignoreTLS: true, dkim: dkimOptions(config) });
    try {
      await transport.sendMail(copy.mail);
    } finally {
      transport.close();
    }
    const { raw } = await server.next();
    expect(raw.toString()).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=acme.test;/);

    const resolver = resolverFor(key.recordName, key.txtRecord);
    const result = await dkimVerify(raw, { resolver });
    expect(result.results).toHaveLength(1);
    expect(result.results[0]!.status.result).toBe("pass");
    expect(result.results[0]!.signingDomain).toBe("acme.test");
    expect(result.results[0]!.selector).toBe("em2026");

    const tampered = Buffer.from(raw.toString().replace("Subject: ", "Subject: Re: "));
    expect((await dkimVerify(tampered, { resolver })).results[0]!.status.result).toBe("fail");
    const otherKey = generateDkimKey({ domain: "acme.test", selector: "em2026" });
    const wrongDns = await dkimVerify(raw, { resolver: resolverFor(key.recordName, otherKey.txtRecord) });
    expect(wrongDns.results[0]!.status.result).toBe("fail");
  });
});
