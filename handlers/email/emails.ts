/** Messages (EM-3, X-EM-3..7): send, read, list, and one recipient's rendered copy; the caller's mode's only (X-EM-27). */
import { paging } from "../../server/http/handler-inputs.ts";
import { notFound } from "../../server/http/problem.ts";
import { addressKey } from "./domain/addresses.ts";
import { emailView } from "./shared/views.ts";
import { principalOf, type EmailDeps, type EmailHandlers } from "./email-handlers.ts";
import type { EmailRow } from "./storage/message-queries.ts";

async function fullView(deps: EmailDeps, email: EmailRow) {
  const [recipients, timeline, attachments] = await Promise.all([
    deps.queries.recipientsOf(email.id),
    deps.queries.timelineOf(email.id),
    deps.queries.attachmentsOf(email.id),
  ]);
  return emailView(email, recipients, timeline, attachments);
}

export const emailHandlers: Pick<EmailHandlers, "sendEmail" | "getEmail" | "listEmails" | "getRenderedEmail"> = {
  async sendEmail({ auth, body, headers }, deps) {
    const principal = principalOf(auth);
    const limits = deps.rateLimiter.take(principal.apiKeyId);
    const key = headers["idempotency-key"];
    const { email, replayed, stored } = await deps.messages.send(principal, body, typeof key === "string" ? key : undefined);
    return {
      status: 202,
      headers: { Location: `/v1/emails/${email.id}`, ...limits, ...(replayed ? { "Idempotent-Replayed": "true" } : {}) },
      body: stored ? emailView(stored.email, stored.recipients, stored.timeline, stored.attachments) : await fullView(deps, email),
    };
  },

  async getEmail({ auth, params }, deps) {
    return { status: 200, body: await fullView(deps, await deps.messages.get(params.emailId, principalOf(auth).test)) };
  },

  async listEmails({ auth, query }, deps) {
    const { page, pageSize } = paging(query);
    const filter = { testMode: principalOf(auth).test, status: query.status, tag: query.tag };
    const { items, totalCount } = await deps.queries.listEmails(filter, page, pageSize);
    const views = await Promise.all(items.map((e) => fullView(deps, e)));
    return { status: 200, body: { items: views, totalCount, page, pageSize } };
  },

  async getRenderedEmail({ auth, params }, deps) {
    const email = await deps.messages.get(params.emailId, principalOf(auth).test);
    const copy = (await deps.queries.recipientsOf(email.id)).find((r) => r.address_key === addressKey(params.recipient));
    if (!copy) throw notFound("This address is not a recipient of this email.");
    return { status: 200, body: await deps.renderer.rendered(email, copy) };
  },
};
