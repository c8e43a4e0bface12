/** Messages (EM-3, X-EM-3..7): send, read, list, and one recipient's rendered copy; the caller's mode's only (X-EM-27). */
import { paging } from "../../server/http/handler-inputs.ts";
import { toEmail } from "./shared/mappers.ts";
import { principalOf, type EmailHandlers } from "./email-handlers.ts";

export const emailHandlers: Pick<EmailHandlers, "sendEmail" | "getEmail" | "listEmails" | "getRenderedEmail"> = {
  async sendEmail({ auth, body, headers }, deps) {
    const principal = principalOf(auth);
    const limits = deps.rateLimiter.take(principal.apiKeyId);
    const key = headers["idempotency-key"];
    const { email, replayed, stored } = await deps.messages.send(principal, body, typeof key === "string" ? key : undefined);
    return {
      status: 202,
      headers: { Location: `/v1/emails/${email.id}`, ...limits, ...(replayed ? { "Idempotent-Replayed": "true" } : {}) },
      body: toEmail(stored ?? (await deps.messages.recordOf(email))),
    };
  },

  async getEmail({ auth, params }, deps) {
    return { status: 200, body: toEmail(await deps.messages.read(params.emailId, principalOf(auth).test)) };
  },

  async listEmails({ auth, query }, deps) {
    const { page, pageSize } = paging(query);
    const filter = { testMode: principalOf(auth).test, status: query.status, tag: query.tag };
    const { items, totalCount } = await deps.messages.list(filter, page, pageSize);
    return { status: 200, body: { items: items.map(toEmail), totalCount, page, pageSize } };
  },

  async getRenderedEmail({ auth, params }, deps) {
    const { email, copy } = await deps.messages.copyOf(params.emailId, principalOf(auth).test, params.recipient);
    return { status: 200, body: await deps.renderer.rendered(email, copy) };
  },
};
