/**
 * EM-2, EM-3, EM-8, EM-9, EM-10, EM-11 and the sending decisions (X-EM-3..7): what a client of the
 * email API sees, through the built-in simulator (a real SMTP peer behind the same nodemailer path).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/email.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import type { EmailTarget } from "../harness/targets.ts";

type EmailCreate = components["schemas"]["EmailCreate"];

let target: EmailTarget;
/** Typed clients: the full-access API key by default. */
let api: EmailWorld["api"];
let n = 0;
/** A fresh simulator address (hard bounces and complaints suppress an address). */
const sim = (local: string) => `${local}+${Date.now().toString(36)}${++n}@simulator.test`;
const receipt = { from: "receipts@shop.example.com", subject: "Your receipt", text: "Thanks." };
/** Sends a receipt with `body`'s fields through the typed client. */
const send = (body: Pick<EmailCreate, "to"> & Partial<EmailCreate>) => api().POST("/v1/emails", { body: { ...receipt, ...body } });
/** Sends a receipt the contract forbids (base64 not padded, a repeated recipient or tag): raw, on purpose. */
const sendForbidden = (body: Record<string, unknown>) =>
  request(target.url, "POST", "/v1/emails", { token: target.apiKey, json: { ...receipt, ...body } });
const getEmail = (emailId: string) => api().GET("/v1/emails/{emailId}", { params: { path: { emailId } } });
const getSuppression = (email: string) => api().GET("/v1/suppressions/{email}", { params: { path: { email } } });

beforeAll(async () => {
  ({ target, api } = await emailWorld());
});
afterAll(async () => target?.close());

describe("API keys", () => {
  it("EM-2 management calls without a valid API key are refused with 401 and a Bearer challenge", async () => {
    for (const token of [undefined, "em_live_" + "x".repeat(43), "not-a-key"]) {
      const r = await request(target.url, "GET", "/v1/emails?page=1", token === undefined ? {} : { token });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer realm="email"/);
      // RFC 6750 §3: no credentials, no error code; a malformed or unknown key is invalid_token.
      expect(r.body.code).toBe(token === undefined ? "unauthorized" : "invalid_token");
      if (token === undefined) expect(r.headers.get("www-authenticate")).not.toMatch(/error=/);
      else expect(r.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    }
    const ok = await api().GET("/v1/emails");
    expect(ok.response.status).toBe(200);
    // A revoked key stops at once, with the same invalid_token answer.
    const made = await api().POST("/v1/api-keys", { body: { name: "EM-2 revoked" } });
    expect(made.response.status).toBe(201);
    const { id: apiKeyId, key } = made.data!;
    expect((await api(key).GET("/v1/emails")).response.status).toBe(200);
    expect((await api().DELETE("/v1/api-keys/{apiKeyId}", { params: { path: { apiKeyId } } })).response.status).toBe(204);
    const revoked = await request(target.url, "GET", "/v1/emails", { token: key });
    expect(revoked.status).toBe(401);
    expect(revoked.body.code).toBe("invalid_token");
    expect(revoked.headers.get("www-authenticate")).toMatch(/^Bearer realm="email", error="invalid_token"/);
  });
});

describe("API key listing", () => {
  it("X-EM-2 listApiKeys lists the active keys newest first, without the keys themselves", async () => {
    const older = await api().POST("/v1/api-keys", { body: { name: "X-EM-2 older" } });
    const newer = await api().POST("/v1/api-keys", { body: { name: "X-EM-2 newer", mode: "test", permission: "sending_access" } });
    expect([older.response.status, newer.response.status]).toEqual([201, 201]);
    const list = await api().GET("/v1/api-keys", { params: { query: { page: 1, pageSize: 100 } } });
    expect(list.response.status).toBe(200);
    const ids = list.data!.items.map((k) => k.id);
    expect(ids.indexOf(newer.data!.id)).toBeGreaterThanOrEqual(0);
    // Two keys made within one millisecond share createdAt; their relative order is then free.
    if (newer.data!.createdAt > older.data!.createdAt) expect(ids.indexOf(newer.data!.id)).toBeLessThan(ids.indexOf(older.data!.id));
    const times = list.data!.items.map((k) => k.createdAt);
    expect(times).toEqual([...times].sort().reverse());
    expect(JSON.stringify(list.data)).not.toContain(older.data!.key);
    expect(list.data!.items.find((k) => k.id === newer.data!.id)).toMatchObject({
      mode: "test",
      permission: "sending_access",
      prefix: newer.data!.key.slice(0, 12),
    });
  });
});

describe("sending and the message record", () => {
  it("EM-3 GET /v1/emails/{id} returns the message record with its status; EM-10 email.delivered when the receiving server accepts", async () => {
    const to = sim("delivered");
    const sent = await send({ to: [to] });
    expect(sent.response.status).toBe(202);
    expect(sent.response.headers.get("location")).toBe(`/v1/emails/${sent.data!.id}`);
    expect(sent.data!.status).toBe("Queued");
    await target.settle();
    const got = await getEmail(sent.data!.id);
    expect(got.response.status).toBe(200);
    expect(got.data!.status).toBe("Delivered");
    expect(got.data!.recipients[0]).toMatchObject({ email: to, status: "Delivered", transport: "simulator", attempts: 1 });
    expect(got.data!.recipients[0]!.smtpResponse).toMatch(/^250 /);
    expect(got.data!.events.map((e) => e.type)).toEqual(["email.queued", "email.sent", "email.delivered"]);
  });

  it("EM-8 a hard bounce sets Bounced with errorMessage and suppresses the recipient", async () => {
    const to = sim("bounced");
    const sent = await send({ to: [to] });
    await target.settle();
    const got = await getEmail(sent.data!.id);
    expect(got.data!.status).toBe("Bounced");
    expect(got.data!.recipients[0]).toMatchObject({ status: "Bounced", bounceType: "hard", smtpStatus: "5.1.1" });
    expect(got.data!.recipients[0]!.errorMessage).toMatch(/^550 5\.1\.1 /);
    const suppression = await getSuppression(to);
    expect(suppression.response.status).toBe(200);
    expect(suppression.data).toMatchObject({ reason: "hard_bounce", messageId: sent.data!.id });
    // And the address is not mailed again.
    const again = await send({ to: [to] });
    expect(again.response.status).toBe(422);
    expect(again.error?.code).toBe("recipient_suppressed");
  });

  it("X-EM-16 a policy rejection (5.7.26) and a full mailbox are soft bounces that do not suppress", async () => {
    const policy = sim("policy-reject");
    const full = sim("soft-bounce");
    const sent = await send({ to: [policy, full] });
    await target.settle();
    const got = await getEmail(sent.data!.id);
    expect(got.data!.recipients.map((r) => r.bounceType)).toEqual(["soft", "soft"]);
    for (const a of [policy, full]) expect((await getSuppression(a)).response.status).toBe(404);
  });

  it("EM-8 a bounce that arrives after acceptance (DSN to the copy's return path) moves Delivered to Bounced and suppresses", async () => {
    const to = sim("async-bounce");
    const sent = await send({ to: [to] });
    await target.settle();
    let got = await getEmail(sent.data!.id);
    // A deployment's settle is a fixed wait: the report the simulator mails back may come later on a busy machine.
    for (let deadline = Date.now() + 30_000; !got.data!.events.some((e) => e.type === "email.bounced") && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 250));
      got = await getEmail(sent.data!.id);
    }
    const types = got.data!.events.map((e) => e.type);
    expect(types).toEqual(["email.queued", "email.sent", "email.delivered", "email.bounced"]);
    expect(got.data!.recipients[0]).toMatchObject({ status: "Bounced", bounceType: "hard" });
    expect((await getSuppression(to)).data?.reason).toBe("hard_bounce");
  });

  it("EM-9 a complaint (ARF naming the copy's Message-ID) sets Complained and suppresses the recipient", async () => {
    const to = sim("complained");
    const sent = await send({ to: [to] });
    await target.settle();
    const got = await getEmail(sent.data!.id);
    expect(got.data!.recipients[0]!.status).toBe("Complained");
    expect((await getSuppression(to)).data?.reason).toBe("complaint");
    const lift = await api().DELETE("/v1/suppressions/{email}", { params: { path: { email: to } } });
    expect(lift.response.status).toBe(422);
    expect(lift.error?.code).toBe("complaint_not_removable");
    const forced = await api().DELETE("/v1/suppressions/{email}", { params: { path: { email: to }, query: { force: true } } });
    expect(forced.response.status).toBe(204);
  });

  it("X-EM-5 one suppressed recipient does not fail the others: it is Suppressed in the record and never sent", async () => {
    const suppressed = sim("delivered");
    expect((await api().POST("/v1/suppressions", { body: { email: suppressed } })).response.status).toBe(201);
    const other = sim("delivered");
    const sent = await send({ to: [suppressed, other] });
    expect(sent.response.status).toBe(202);
    await target.settle();
    const got = await getEmail(sent.data!.id);
    expect(got.data!.recipients.map((r) => r.status)).toEqual(["Suppressed", "Delivered"]);
    expect(got.data!.recipients[0]!.attempts).toBe(0);
  });

  it("EM-10 opens and clicks are recorded when tracking is on; a click redirects only to the link of the message", async () => {
    const to = sim("delivered");
    const sent = await send({
      to: [to],
      html: '<p>Hi <a href="https://shop.example.com/orders/1">order</a></p>',
      tracking: { opens: true, clicks: true },
    });
    await target.settle();
    const rendered = await api().GET("/v1/emails/{emailId}/recipients/{recipient}/content", {
      params: { path: { emailId: sent.data!.id, recipient: to } },
    });
    expect(rendered.response.status).toBe(200);
    const { links, html, openTrackingUrl } = rendered.data!;
    expect(links).toHaveLength(1);
    expect(html).toContain(links[0]!.trackingUrl);
    const pixel = await fetch(openTrackingUrl!);
    expect(pixel.headers.get("content-type")).toBe("image/gif");
    const click = await fetch(links[0]!.trackingUrl, { redirect: "manual" });
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/orders/1");
    const unknown = await fetch(`${target.url}/v1/track/click/AAAAAAAAAAAAAAAAAAAAAA`, { redirect: "manual" });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toMatch(/^text\/html/);
    const got = await getEmail(sent.data!.id);
    expect(got.data!.recipients[0]!.openedAt).toBeDefined();
    expect(got.data!.recipients[0]!.clickedAt).toBeDefined();
    expect(got.data!.events.map((e) => e.type)).toEqual(expect.arrayContaining(["email.opened", "email.clicked"]));
  });

  it("X-EM-3 attachments: padded base64 only (400 naming the content), the record shows each decoded size, executable types are 422", async () => {
    for (const content of ["==", "QQ", "QUJDR"]) {
      const bad = await sendForbidden({ to: [sim("delivered")], attachments: [{ filename: "a.txt", contentType: "text/plain", content }] });
      expect(bad.status).toBe(400);
      expect(bad.body.errors).toEqual([{ field: "body.attachments[0].content", message: expect.any(String) }]);
    }
    const files = ["", "A", "AB", "ABC", "ABCD"].map((text, i) => ({
      filename: `f${i}.txt`,
      contentType: "text/plain",
      content: Buffer.from(text).toString("base64"),
    }));
    const sent = await send({ to: [sim("delivered")], attachments: files });
    expect(sent.response.status).toBe(202);
    expect(sent.data!.attachments!.map((a) => a.size)).toEqual([0, 1, 2, 3, 4]);
    const exe = await send({
      to: [sim("delivered")],
      attachments: [{ filename: "setup.EXE", contentType: "application/octet-stream", content: "TVqQ" }],
    });
    expect(exe.response.status).toBe(422);
    expect(exe.error?.code).toBe("attachment_not_allowed");
  });

  it("X-EM-3 blocked attachment types: the complete list, whatever the case, trailing dots or spaces, invisible characters or a double extension; a bidirectional control character is refused", async () => {
    const attach = (filename: string) =>
      send({ to: [sim("delivered")], attachments: [{ filename, contentType: "application/octet-stream", content: "TVqQ" }] });
    const blocked = [
      // what the issue found missing
      ...["iso", "img", "vhd", "wsf", "msc", "chm", "appx", "one", "url", "docm", "html", "svg", "xz", "lzh", "elf", "macho"].map(
        (ext) => `file.${ext}`,
      ),
      // the tricks: case, trailing dots and spaces (Windows drops them), double extensions, invisible and full-width characters
      "setup.EXE",
      "evil.exe.",
      "evil.exe ",
      "evil.exe. . ",
      "invoice.pdf.exe",
      "evil.e\u200Bxe",
      "evil.\uFF45\uFF58\uFF45",
      "Report.HTM",
      "macro.XLSM",
      "image.svgz",
    ];
    for (const filename of blocked) {
      const res = await attach(filename);
      expect(res.response.status, JSON.stringify(filename)).toBe(422);
      expect(res.error, JSON.stringify(filename)).toMatchObject({
        code: "attachment_not_allowed",
        errors: [{ field: "body.attachments[0].filename" }],
      });
    }
    // A right-to-left override shows "invoice\u202Egpj.exe" as "invoiceexe.jpg"; every bidirectional control is refused.
    for (const filename of ["invoice\u202Egpj.exe", "invoice\u202Etxt.pdf", "a\u2066b\u2069.txt", "a\u200Fb.txt", "a\u061Cb.txt"]) {
      const res = await attach(filename);
      expect(res.response.status, JSON.stringify(filename)).toBe(422);
      expect(res.error?.errors, JSON.stringify(filename)).toEqual([
        { field: "body.attachments[0].filename", message: expect.stringMatching(/bidirectional/) },
      ]);
    }
    // Only the last extension decides; names in any script, with joiners, are taken as given.
    for (const filename of ["setup.exe.pdf", "exe", "notes.txt", "photo.jpeg", "گزارش\u200Cها.pdf", "archive.tar.gz"]) {
      const res = await attach(filename);
      expect(res.response.status, JSON.stringify(filename)).toBe(202);
      expect(res.data!.attachments![0]!.filename).toBe(filename);
    }
  });

  it("X-EM-3 custom headers whose names differ only in case are 400 naming the later one; different names are kept", async () => {
    const cases: Array<Record<string, string>> = [
      { "List-Unsubscribe": "<https://shop.example.com/u/1>", "list-unsubscribe": "<https://shop.example.com/u/2>" },
      { "X-Campaign": "a", "X-CAMPAIGN": "b" },
    ];
    for (const headers of cases) {
      const [first, later] = Object.keys(headers);
      const res = await send({ to: [sim("delivered")], headers });
      expect(res.response.status, later).toBe(400);
      expect(res.error).toMatchObject({
        code: "validation_failed",
        errors: [{ field: `body.headers.${later}`, message: expect.stringContaining(first!) }],
      });
    }
    const kept = await send({
      to: [sim("delivered")],
      headers: { "List-Unsubscribe": "<https://shop.example.com/u/1>", "X-Campaign": "a" },
    });
    expect(kept.response.status).toBe(202);
    expect(Object.keys(kept.data!.headers)).toEqual(["List-Unsubscribe", "X-Campaign"]);
  });

  it("X-EM-3 a repeated recipient is 400: the schema's uniqueItems names body.to, a case variant names the later body.to[i]", async () => {
    const to = sim("delivered");
    const same = await sendForbidden({ to: [to, to] });
    expect(same.status).toBe(400);
    expect(same.body.errors.map((e: { field: string }) => e.field)).toEqual(["body.to"]);
    const folded = await sendForbidden({ to: [to, to.toUpperCase()] });
    expect(folded.status).toBe(400);
    expect(folded.body.errors).toEqual([{ field: "body.to[1]", message: expect.any(String) }]);
    const tags = await sendForbidden({ to: [to], tags: ["a", "a"] });
    expect(tags.status).toBe(400);
    expect(tags.body.errors.map((e: { field: string }) => e.field)).toEqual(["body.tags"]);
  });

  it("X-API-18 X-EM-21 an address whose domain is an IP address is 400 validation_failed naming the field, bare (a@127.0.0.1, a@10.1, a@127.0.0.0x1) or bracketed, in every address field", async () => {
    const ipDomains = ["a@127.0.0.1", "a@10.1", "a@127.0.0.0x1", "a@[127.0.0.1]", "postmaster@192.0.2.1"];
    for (const address of ipDomains) {
      const cases: Array<[string, Pick<EmailCreate, "to"> & Partial<EmailCreate>]> = [
        ["body.to[0]", { to: [address] }],
        ["body.from", { to: [sim("delivered")], from: address }],
        ["body.replyTo[0]", { to: [sim("delivered")], replyTo: [address] }],
      ];
      for (const [field, body] of cases) {
        const sent = await send(body);
        expect(sent.response.status, `${field} ${address}`).toBe(400);
        expect(sent.error, `${field} ${address}`).toMatchObject({ code: "validation_failed", errors: [{ field }] });
      }
      const suppressed = await api().POST("/v1/suppressions", { body: { email: address } });
      expect(suppressed.response.status, address).toBe(400);
      expect(suppressed.error?.errors).toEqual([{ field: "body.email", message: expect.any(String) }]);
    }
    // A test key routes every copy to the simulator: the address is refused before any routing (in-process: the key is made there).
    if (target.service) {
      const { key } = await target.service.deps.apiKeys.create({ name: "ip-literal-test", test: true });
      expect((await api(key).POST("/v1/emails", { body: { ...receipt, to: ["a@127.0.0.1"] } })).response.status).toBe(400);
    }
    // Domains that only contain digits in a label, or end in a label that is not a number, are domain names.
    for (const address of ["a@1.example.com", "a@123.456.example", "a@mail.0xfood.example"]) {
      expect((await send({ to: [address] })).response.status, address).not.toBe(400);
    }
  });

  it("X-EM-14 adding a suppression by hand is 201 with reason manual; adding an address already suppressed is 200 with its entry unchanged, the original reason kept", async () => {
    const bounced = sim("bounced");
    expect((await send({ to: [bounced] })).response.status).toBe(202);
    await target.settle();
    const suppress = (email: string) => api().POST("/v1/suppressions", { body: { email } });
    const first = await suppress(bounced);
    expect(first.response.status).toBe(200);
    expect(first.data).toMatchObject({ email: bounced, reason: "hard_bounce" });
    const address = `ex-customer-${Date.now().toString(36)}@example.org`;
    const added = await suppress(address);
    expect(added.response.status).toBe(201);
    expect(added.data).toMatchObject({ email: address, reason: "manual" });
    const again = await suppress(address.toUpperCase());
    expect(again.response.status).toBe(200);
    expect(again.data).toEqual(added.data);
  });

  it("EM-11 every path carries the /v1 prefix", async () => {
    // A path outside the document: only a raw request can send it.
    expect((await request(target.url, "GET", "/emails", { token: target.apiKey })).status).toBe(404);
    expect((await api().GET("/v1/suppressions")).response.status).toBe(200);
  });
});
