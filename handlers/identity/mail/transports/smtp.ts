/**
 * Identity's mail to any SMTP relay (X-ID-MAIL-4), through nodemailer: `smtp://` (STARTTLS when
 * offered) or `smtps://` URLs with their credentials. Each message carries a Message-ID made of its
 * outbox id, the same on every attempt, so that a receiver can recognise a repeated one. What the
 * answer means (RFC 5321 §4.2.1): 2xx sent; a 5xx reply fails for good; a 4xx reply or a
 * connection failure is tried again.
 */
import { createTransport } from "nodemailer";
import type { DeliveryAnswer, MailTransport, OutgoingMail } from "../../domain/mail/messages.ts";

export function smtpTransport(o: { url: string; from: string; fromName: string; timeoutMs?: number }): MailTransport {
  const timeout = o.timeoutMs ?? 15_000;
  // Every wait bounded well within the dispatcher's lease, so an attempt ends before another instance may claim its message.
  const transporter = createTransport({ url: o.url, connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout });
  const domain = o.from.split("@")[1] ?? "identity.invalid";
  return {
    name: "smtp",
    async send(mail: OutgoingMail): Promise<DeliveryAnswer> {
      try {
        await transporter.sendMail({
          from: { name: o.fromName, address: o.from },
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: `<${mail.id}@${domain}>`,
        });
        return { kind: "sent" };
      } catch (err) {
        const e = err as Error & { responseCode?: number; response?: string };
        const error = `SMTP: ${e.response ?? e.message}`.slice(0, 500);
        return { kind: e.responseCode !== undefined && e.responseCode >= 500 ? "failed" : "retry", error };
      }
    },
    async close() {
      transporter.close();
    },
  };
}
