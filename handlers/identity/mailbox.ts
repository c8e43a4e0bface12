/**
 * The local mailbox pages (X-ID-MAIL-5): the messages identity queued, one message, and its HTML
 * body. Every path answers the 404 page when the mailbox is off (not a local deployment) or the
 * message is unknown. The HTML body is served as its own page under the hosted pages' policy (no
 * script), so its links are clickable as in a mail client. An id that breaks the contract (too long
 * to be one) names no message: the same 404 page.
 */
import type { IdentityHandlers } from "./identity-handlers.ts";
import type { MailOutboxRow } from "./storage/mail-outbox.ts";
import { asError, page, send } from "./shared/hosted-pages.ts";
import { type MailboxEntry, mailboxListPage, mailboxMessagePage, mailboxNotFoundPage } from "./views/mailbox.ts";

const notFoundPage = () => page(404, mailboxNotFoundPage());
const notFound = () => send<never>(notFoundPage());

const entryOf = (r: MailOutboxRow): MailboxEntry => ({
  id: r.id,
  recipient: r.recipient,
  subject: r.subject,
  status: r.status,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
  attempts: r.attempts,
  lastError: r.last_error,
  text: r.text_body,
  hasHtml: r.html_body !== null,
});

export const mailboxHandlers: Pick<IdentityHandlers, "mailboxPage" | "mailboxMessagePage" | "mailboxMessageHtml"> = {
  async mailboxPage(_input, deps) {
    const mailbox = deps.mail.mailbox;
    if (!mailbox) return notFound();
    return send(page(200, mailboxListPage((await mailbox.newest()).map(entryOf))));
  },

  async mailboxMessagePage({ params }, deps) {
    const message = await deps.mail.mailbox?.find(params.id);
    if (!message) return notFound();
    return send(page(200, mailboxMessagePage(entryOf(message))));
  },

  async mailboxMessageHtml({ params }, deps) {
    const message = await deps.mail.mailbox?.find(params.id);
    if (message?.html_body == null) return notFound();
    return send(page(200, message.html_body));
  },
};

export const mailboxProblemMappers = () => ({
  mailboxMessagePage: () => asError(notFoundPage()),
  mailboxMessageHtml: () => asError(notFoundPage()),
});
