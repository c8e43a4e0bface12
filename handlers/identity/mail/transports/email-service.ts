/**
 * Identity's mail through the platform's email service (X-ID-MAIL-4): its documented
 * `POST /v1/emails` with the deployment's API key, and the outbox row's id as `Idempotency-Key`, so
 * that an attempt repeated after a lost answer or an expired lease is the same send, not a second
 * one (X-EM-4 remembers the key for 24 hours). What the answer means: 202 sent; 408, 409 (the
 * first request is still in progress), 429, 5xx and network failures are tried again; any other
 * 4xx (a bad key, a refused recipient or sender) will not change by trying again and fails.
 */
import type { DeliveryAnswer, MailTransport, OutgoingMail } from "../../domain/mail/messages.ts";

const RETRIED = new Set([408, 409, 425, 429]);

export function emailServiceTransport(o: {
  url: string;
  apiKey: string;
  from: string;
  fromName: string;
  timeoutMs?: number;
}): MailTransport {
  const endpoint = `${o.url.replace(/\/$/, "")}/v1/emails`;
  return {
    name: "email-service",
    async send(mail: OutgoingMail): Promise<DeliveryAnswer> {
      let response: Response;
      try {
        response = await fetch(endpoint, {
          method: "POST",
          headers: { authorization: `Bearer ${o.apiKey}`, "content-type": "application/json", "idempotency-key": mail.id },
          body: JSON.stringify({
            from: o.from,
            fromName: o.fromName,
            to: [mail.to],
            subject: mail.subject,
            text: mail.text,
            html: mail.html,
          }),
          signal: AbortSignal.timeout(o.timeoutMs ?? 15_000),
        });
      } catch (err) {
        return { kind: "retry", error: `email service unreachable: ${(err as Error).message}` };
      }
      if (response.status === 202 || response.status === 200) {
        await response.body?.cancel();
        return { kind: "sent" };
      }
      const text = await response.text().catch(() => "");
      let detail = text.slice(0, 300);
      try {
        const problem = JSON.parse(text) as { code?: string; detail?: string };
        detail = [problem.code, problem.detail].filter(Boolean).join(": ") || detail;
      } catch {}
      const error = `email service answered ${response.status}${detail ? `: ${detail}` : ""}`;
      return { kind: RETRIED.has(response.status) || response.status >= 500 ? "retry" : "failed", error };
    },
  };
}
