/**
 * X-ID-MAIL-1..6: identity's mail. Queued in the transaction of its cause, delivered through the
 * email service and through an SMTP relay (both running in this file), retried on the clock, sent
 * once by two dispatchers on one database, and shown by the local mailbox on a local deployment
 * only. Everything here arranges the service's own state or configuration: in-process only.
 */
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailApi } from "../harness/api.ts";
import { createApp } from "../harness/identity-fixtures.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { emailTarget, type EmailTarget, identityTarget, type IdentityTarget, uniqueEmail } from "../harness/targets.ts";
import { createMailDelivery } from "../../handlers/identity/domain/mail/delivery.ts";
import type { MailTransport, OutgoingMail } from "../../handlers/identity/domain/mail/messages.ts";
import { emailServiceTransport } from "../../handlers/identity/mail/transports/email-service.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.configuration);

/** An SMTP relay in this file: what it received, and the reply it gives to each next message (250 once the list is spent). */
async function smtpRelay() {
  const received: Array<{ from: string; to: string[]; data: string }> = [];
  const replies: Array<{ code: number; message: string }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const reply = replies.shift();
        if (reply) return done(Object.assign(new Error(reply.message), { responseCode: reply.code }));
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(chunks).toString("utf8"),
        });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, received, replies, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const serviceOf = (t: IdentityTarget) => t.service!;
const statusOf = async (t: IdentityTarget, id: string) => serviceOf(t).deps.mail.mailbox!.find(id);

describe("identity mail through an SMTP relay", () => {
  let relay: Awaited<ReturnType<typeof smtpRelay>>;
  let t: IdentityTarget;
  beforeAll(async () => {
    if (identityOnDeployment()) return;
    relay = await smtpRelay();
    t = await identityTarget({
      env: { IDENTITY_MAIL_TRANSPORT: "smtp", IDENTITY_MAIL_SMTP_URL: relay.url, IDENTITY_MAIL_FROM: "no-reply@identity.example" },
    });
  });
  afterAll(async () => {
    await t?.close();
    await relay?.close();
  });

  const queue = (to: string, values: Record<string, string> = { sentAt: "now" }) =>
    serviceOf(t).ctx.storage.transaction((tx) => serviceOf(t).ctx.mail.queue(tx, { to, template: "test-message", values }));

  it("X-ID-MAIL-1 a message queued in a transaction that rolls back is never stored nor sent; one that commits is", async () => {
    const { ctx, deps } = serviceOf(t);
    const lost = uniqueEmail("rolled-back");
    await expect(
      ctx.storage.transaction(async (tx) => {
        await ctx.mail.queue(tx, { to: lost, template: "test-message", values: { sentAt: "now" } });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    const kept = uniqueEmail("committed");
    const id = await queue(kept);
    await deps.mail.dispatchDue();
    expect((await deps.mail.mailbox!.newest()).some((m) => m.recipient === lost)).toBe(false);
    expect(relay.received.some((m) => m.to.includes(lost))).toBe(false);
    expect((await statusOf(t, id))?.status).toBe("sent");
    expect(relay.received.filter((m) => m.to.includes(kept))).toHaveLength(1);
  });

  it("X-ID-MAIL-4 SMTP: the relay receives the rendered message from IDENTITY_MAIL_FROM, its Message-ID made of the outbox id", async () => {
    const to = uniqueEmail("smtp");
    const id = await queue(to);
    await serviceOf(t).deps.mail.dispatchDue();
    const message = relay.received.find((m) => m.to.includes(to));
    expect(message?.from).toBe("no-reply@identity.example");
    expect(message?.data).toMatch(/Subject: Test message from Identity/);
    expect(message?.data).toContain(`Message-ID: <${id}@identity.example>`);
    expect(message?.data).toMatch(/Content-Type: text\/html/);
  });

  it("X-ID-MAIL-2 a temporary refusal is tried again after the delay on the clock; a permanent one fails at once", async () => {
    const { deps } = serviceOf(t);
    const clock = t.clock!;
    const to = uniqueEmail("retried");
    relay.replies.push({ code: 451, message: "try later" });
    const id = await queue(to);
    await deps.mail.dispatchDue();
    const first = await statusOf(t, id);
    expect(first).toMatchObject({ status: "pending", attempts: 1 });
    expect(first?.last_error).toMatch(/451|try later/);
    expect(Date.parse(first!.next_attempt_at!) - clock.now().getTime()).toBeGreaterThan(25_000);
    await deps.mail.dispatchDue();
    expect((await statusOf(t, id))?.attempts).toBe(1);
    clock.advance(31_000);
    await deps.mail.dispatchDue();
    expect(await statusOf(t, id)).toMatchObject({ status: "sent", attempts: 2, last_error: null });
    expect(relay.received.filter((m) => m.to.includes(to))).toHaveLength(1);

    relay.replies.push({ code: 550, message: "no such user" });
    const refused = await queue(uniqueEmail("refused"));
    await deps.mail.dispatchDue();
    expect(await statusOf(t, refused)).toMatchObject({ status: "failed", attempts: 1 });
  });

  it("X-ID-MAIL-2 two dispatchers on one database send each message exactly once", async () => {
    const { ctx } = serviceOf(t);
    const sent: string[] = [];
    const transport: MailTransport = {
      name: "counting",
      async send(mail: OutgoingMail) {
        sent.push(mail.id);
        await new Promise((r) => setTimeout(r, 2));
        return { kind: "sent" };
      },
    };
    const dispatcher = () =>
      createMailDelivery({
        clock: ctx.clock,
        logger: ctx.logger,
        outbox: ctx.storage.mailOutbox,
        transport,
        retryDelaysMs: [1000],
        keepBodies: true,
        concurrency: 3,
      });
    const a = dispatcher();
    const b = dispatcher();
    // Stop the service's own dispatcher from taking part: these two are the instances under test.
    await serviceOf(t).deps.mail.stop();
    const ids = await ctx.storage.transaction(async (tx) => {
      const out: string[] = [];
      for (let i = 0; i < 24; i++)
        out.push(await ctx.mail.queue(tx, { to: uniqueEmail("once"), template: "test-message", values: { sentAt: "now" } }));
      return out;
    });
    await Promise.all([a.dispatchDue(), b.dispatchDue(), a.dispatchDue(), b.dispatchDue()]);
    expect(sent.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    for (const id of ids) expect((await statusOf(t, id))?.status).toBe("sent");
  });

  it("X-ID-MAIL-6 the operator's test message is sent through the configured transport at once, and says so", async () => {
    const to = uniqueEmail("operator");
    const outcome = await serviceOf(t).deps.mail.sendTestMessage(to);
    expect(outcome).toMatchObject({ sent: true, status: "sent", error: null });
    expect(relay.received.some((m) => m.to.includes(to))).toBe(true);
  });
});

describe("identity mail through the email service", () => {
  let email: EmailTarget;
  let t: IdentityTarget;
  let key: string;
  beforeAll(async () => {
    if (identityOnDeployment()) return;
    email = await emailTarget();
    key = (await email.service!.deps.apiKeys.create({ name: "identity", test: true, permission: "sending_access" })).key;
    t = await identityTarget({ env: { IDENTITY_MAIL_EMAIL_SERVICE_URL: email.url, IDENTITY_MAIL_API_KEY: key } });
  });
  afterAll(async () => {
    await t?.close();
    await email?.close();
  });

  it("X-ID-MAIL-4 the email service accepts the message (POST /v1/emails, the outbox id as Idempotency-Key) with the application's name", async () => {
    const app = await createApp(t, { name: "Acme Mail Notes" });
    const to = uniqueEmail("via-email");
    const { ctx, deps } = serviceOf(t);
    const id = await ctx.storage.transaction((tx) =>
      ctx.mail.queue(tx, { to, template: "test-message", applicationId: app.id, values: { sentAt: "now" } }),
    );
    await deps.mail.dispatchDue();
    expect((await statusOf(t, id))?.status).toBe("sent");
    const listed = await emailApi(email.url, { token: key }).GET("/v1/emails", { params: { query: { page: 1, pageSize: 50 } } });
    const mine = listed.data?.items.filter((m) => m.to.includes(to)) ?? [];
    expect(mine).toHaveLength(1);
    expect(mine[0]!.subject).toBe("Test message from Acme Mail Notes");
    // A repeated attempt (a lost answer, an expired lease) is the same send: the outbox id is its Idempotency-Key.
    const row = (await statusOf(t, id))!;
    const again = emailServiceTransport({ url: email.url, apiKey: key, from: "no-reply@identity.localhost", fromName: "Identity" });
    expect(await again.send({ id, to, subject: row.subject, text: row.text_body!, html: row.html_body! })).toEqual({ kind: "sent" });
    const relisted = await emailApi(email.url, { token: key }).GET("/v1/emails", { params: { query: { page: 1, pageSize: 50 } } });
    expect(relisted.data?.items.filter((m) => m.to.includes(to))).toHaveLength(1);
  });
});

describe("the local mailbox", () => {
  let local: IdentityTarget;
  let off: IdentityTarget;
  let remote: IdentityTarget;
  beforeAll(async () => {
    if (identityOnDeployment()) return;
    [local, off, remote] = await Promise.all([
      identityTarget(),
      identityTarget({ env: { IDENTITY_MAILBOX: "off" } }),
      identityTarget({ env: { IDENTITY_PUBLIC_URL: "https://id.example.com" } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([local?.close(), off?.close(), remote?.close()]);
  });

  const queueOn = (t: IdentityTarget, values: Record<string, string>) =>
    serviceOf(t).ctx.storage.transaction((tx) =>
      serviceOf(t).ctx.mail.queue(tx, { to: uniqueEmail("mailbox"), template: "password-reset", values }),
    );

  it("X-ID-MAIL-5 a local deployment (http on a loopback host) lists what identity queued, shows a message with its links clickable, and its HTML body", async () => {
    const link = `${local.url}/reset?token=${randomUUID()}`;
    const id = await queueOn(local, { link, expiresMinutes: "15" });
    const list = await fetch(`${local.url}/dev/mailbox`);
    expect(list.status).toBe(200);
    const listHtml = await list.text();
    expect(listHtml).toContain(`/dev/mailbox/${id}`);
    expect(listHtml).toContain("Reset your Identity password");
    const message = await fetch(`${local.url}/dev/mailbox/${id}`);
    expect(message.status).toBe(200);
    expect(await message.text()).toContain(`<a href="${link}">`);
    const body = await fetch(`${local.url}/dev/mailbox/${id}/html`);
    expect(body.status).toBe(200);
    expect(body.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(await body.text()).toContain(`href="${link}"`);
    const tooLong = "0".repeat(65);
    for (const path of ["/dev/mailbox/unknown", "/dev/mailbox/unknown/html", `/dev/mailbox/${tooLong}`, `/dev/mailbox/${tooLong}/html`]) {
      const answer = await fetch(`${local.url}${path}`);
      expect(answer.status, path).toBe(404);
      expect(answer.headers.get("content-type"), path).toMatch(/^text\/html/);
    }
  });

  it("X-ID-MAIL-5 with IDENTITY_MAILBOX=off, or a public URL that is not local, every mailbox path is 404", async () => {
    for (const t of [off, remote]) {
      const id = await queueOn(t, { link: "https://id.example.com/reset?token=x", expiresMinutes: "15" });
      for (const path of ["/dev/mailbox", `/dev/mailbox/${id}`, `/dev/mailbox/${id}/html`]) {
        const answer = await fetch(`${t.url}${path}`);
        expect(answer.status, `${path}`).toBe(404);
        expect(await answer.text()).not.toContain("reset?token");
      }
    }
  });

  it("X-ID-MAIL-3 values are escaped in the HTML body and the application's branding frames it", async () => {
    const app = await createApp(local, {
      name: "Brand <Co>",
      branding: { logoUrl: "https://cdn.example.com/logo.png", primaryColor: "#AA3300" },
    });
    const { ctx } = serviceOf(local);
    const id = await ctx.storage.transaction((tx) =>
      ctx.mail.queue(tx, {
        to: uniqueEmail("brand"),
        template: "password-reset",
        applicationId: app.id,
        values: { link: 'https://x.example/"><script>alert(1)</script>', expiresMinutes: 15 },
      }),
    );
    const html = await (await fetch(`${local.url}/dev/mailbox/${id}/html`)).text();
    expect(html).not.toContain("<script>");
    expect(html).toContain("&quot;&gt;&lt;script&gt;");
    expect(html).toContain("Brand &lt;Co&gt;");
    expect(html).toContain('src="https://cdn.example.com/logo.png"');
    expect(html).toContain("#AA3300");
  });
});
