/**
 * Identity's mail (X-ID-MAIL-1..6): the queue the other areas call (`ctx.mail.queue(tx, …)`), the
 * delivery of what was queued (delivery.ts), and the local mailbox's reads. The renderer and the
 * transport are ports the service wires in from handlers/identity/mail/; without a transport (mail
 * not configured) messages are queued and kept, and nothing is sent until one is configured.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../../../server/clock.ts";
import type { IdentityStorage } from "../../storage/index.ts";
import type { MailOutboxRow } from "../../storage/mail-outbox.ts";
import { createMailDelivery, DEFAULT_MAIL_RETRY_DELAYS_MS, type MailDelivery } from "./delivery.ts";
import type { MailQueue, MailRenderer, MailTransport, QueueMail } from "./messages.ts";

export type { MailQueue, MailTemplate, QueueMail } from "./messages.ts";

export interface MailSettings {
  render: MailRenderer;
  /** Undefined when mail is not configured: messages wait in the outbox. */
  transport: MailTransport | undefined;
  /** The local mailbox page is served (X-ID-MAIL-5): only on a local deployment. */
  mailboxEnabled: boolean;
  retryDelaysMs?: readonly number[];
  pollIntervalMs?: number;
}

/** How many messages the mailbox lists. */
const MAILBOX_SIZE = 50;

export function createMailArea(ctx: { clock: Clock; logger: Logger; storage: IdentityStorage }, settings: MailSettings) {
  const { clock, storage } = ctx;
  const outbox = storage.mailOutbox;
  const delivery: MailDelivery | undefined = settings.transport
    ? createMailDelivery({
        clock,
        logger: ctx.logger,
        outbox,
        transport: settings.transport,
        retryDelaysMs: settings.retryDelaysMs ?? DEFAULT_MAIL_RETRY_DELAYS_MS,
        keepBodies: settings.mailboxEnabled,
        ...(settings.pollIntervalMs ? { pollIntervalMs: settings.pollIntervalMs } : {}),
      })
    : undefined;

  const queue: MailQueue["queue"] = async (tx, mail: QueueMail) => {
    const application = mail.applicationId ? await storage.applications.findById(mail.applicationId, tx) : undefined;
    const rendered = settings.render({
      template: mail.template,
      locale: mail.locale,
      values: mail.values,
      ...(application ? { application: { name: application.name, branding: application.branding } } : {}),
    });
    const now = clock.now().toISOString();
    const row: MailOutboxRow = {
      id: randomUUID(),
      template: mail.template,
      locale: rendered.locale,
      application_id: application?.id ?? null,
      recipient: mail.to,
      subject: rendered.subject,
      text_body: rendered.text,
      html_body: rendered.html,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      lease_token: null,
      lease_expires_at: null,
      last_error: null,
      created_at: now,
      finished_at: null,
    };
    await outbox.insert(row, tx);
    if (delivery) outbox.onCommit(tx, delivery.wake);
    return row.id;
  };

  return {
    /** The port other areas are given (ctx.mail). */
    queue: { queue } satisfies MailQueue,
    /** Whether a transport is configured (otherwise mail waits in the outbox). */
    transportName: settings.transport?.name,
    /** The local mailbox (X-ID-MAIL-5): undefined when it is off. */
    mailbox: settings.mailboxEnabled ? { newest: () => outbox.newest(MAILBOX_SIZE), find: (id: string) => outbox.find(id) } : undefined,
    /**
     * The operator's check of the mail settings (X-ID-MAIL-6): queues a test message to `to` and,
     * with a transport configured, sends what is due now, this message included; answers where the
     * message stands then (`pending` with an error: the attempt failed and will be tried again).
     */
    async sendTestMessage(to: string): Promise<{ id: string; sent: boolean; status: string; error: string | null }> {
      const id = await storage.transaction((tx) =>
        queue(tx, { to, template: "test-message", values: { sentAt: clock.now().toISOString() } }),
      );
      await delivery?.dispatchDue();
      const row = await outbox.find(id);
      return { id, sent: row?.status === "sent", status: row?.status ?? "purged", error: row?.last_error ?? null };
    },
    /** Sends what is due now (tests and tools); 0 when no transport is configured. */
    dispatchDue: () => delivery?.dispatchDue() ?? Promise.resolve(0),
    start(): void {
      delivery?.start();
    },
    stop: () => delivery?.stop() ?? Promise.resolve(),
  };
}

export type MailArea = ReturnType<typeof createMailArea>;
