/** The local mailbox's pages (X-ID-MAIL-5): the list, one message, and the 404 page every path answers when the mailbox is off. */
import { escapeHtml, layout } from "./layout.ts";
import { messagePage } from "./messages.ts";

export interface MailboxEntry {
  id: string;
  recipient: string;
  subject: string;
  status: string;
  createdAt: string;
  finishedAt: string | null;
  attempts: number;
  lastError: string | null;
  text: string | null;
  hasHtml: boolean;
}

const WIDE =
  "<style>main { max-width: 60rem; } table { width: 100%; border-collapse: collapse; } td, th { text-align: left; padding: .3rem; border-bottom: 1px solid #dde; vertical-align: top; } pre { white-space: pre-wrap; word-break: break-word; background: #f4f6fa; padding: .75rem; border-radius: 6px; }</style>";

const when = (iso: string) => `${iso.slice(0, 19).replace("T", " ")} UTC`;

/** Text with its http(s) links made clickable; everything else escaped. */
export function linkified(text: string): string {
  return text
    .split(/(https?:\/\/[^\s<>"']+)/)
    .map((part, i) => (i % 2 ? `<a href="${escapeHtml(part)}">${escapeHtml(part)}</a>` : escapeHtml(part)))
    .join("");
}

export function mailboxListPage(entries: MailboxEntry[]): string {
  const rows = entries
    .map(
      (m) =>
        `<tr><td>${escapeHtml(when(m.createdAt))}</td><td>${escapeHtml(m.recipient)}</td><td><a href="/dev/mailbox/${encodeURIComponent(m.id)}">${escapeHtml(m.subject)}</a></td><td>${escapeHtml(m.status)}</td></tr>`,
    )
    .join("\n");
  const table = entries.length
    ? `<table><thead><tr><th>Time</th><th>To</th><th>Subject</th><th>Status</th></tr></thead><tbody>\n${rows}\n</tbody></table>`
    : "<p>No message yet. Mail identity sends (password resets, address verification) appears here.</p>";
  return layout({
    title: "Local mailbox",
    main: `${WIDE}<h1>Local mailbox</h1>\n<p class="muted">What identity sent from this local deployment, newest first. Served only on a local deployment.</p>\n${table}`,
  });
}

export function mailboxMessagePage(m: MailboxEntry): string {
  const facts: Array<[string, string]> = [
    ["To", m.recipient],
    ["Queued", when(m.createdAt)],
    ["Status", m.status + (m.finishedAt ? ` (${when(m.finishedAt)})` : "")],
    ["Attempts", String(m.attempts)],
    ...(m.lastError ? ([["Last error", m.lastError]] as Array<[string, string]>) : []),
  ];
  const dl = `<dl>${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl>`;
  const html = m.hasHtml ? `<p><a href="/dev/mailbox/${encodeURIComponent(m.id)}/html">The HTML body</a></p>` : "";
  const text = m.text !== null ? `<pre>${linkified(m.text)}</pre>` : "<p>The body was not kept.</p>";
  return layout({
    title: m.subject,
    main: `${WIDE}<p><a href="/dev/mailbox">All messages</a></p>\n<h1>${escapeHtml(m.subject)}</h1>\n${dl}\n${html}\n${text}`,
  });
}

export const mailboxNotFoundPage = () =>
  messagePage({ title: "Not found", heading: "Not found", message: "There is no page at this address." });
