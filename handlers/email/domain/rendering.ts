/**
 * A recipient's copy as it is handed to its transport: the HTML with its tracked links (the tokens
 * stored at acceptance, in document order) and its open pixel, the VERP return path, the copy's
 * Message-ID, and the attachments. `getRenderedEmail` shows exactly this.
 */
import type { components } from "../../../generated/types/email.ts";
import { composeCopy, verpAddress, type OutgoingCopy } from "../mail/compose.ts";
import { applyTracking, planTracking } from "../mail/tracking.ts";
import type { EmailRow, MessageQueries, RecipientRow } from "../storage/message-queries.ts";

export function createRenderer(deps: {
  queries: MessageQueries;
  trackingUrl: (kind: "open" | "click", token: string) => string;
  bounceDomain: string;
}) {
  const { queries, trackingUrl } = deps;

  /** The copy's HTML with tracking applied, and its tracked links. */
  async function html(email: EmailRow, copy: RecipientRow) {
    if (email.html === null)
      return { html: undefined, links: [] as Array<{ url: string; trackingUrl: string }>, openTrackingUrl: undefined };
    const stored = email.track_clicks ? await queries.linksOf(copy.id) : [];
    let next = 0;
    const openTrackingUrl = email.track_opens ? trackingUrl("open", copy.open_token) : undefined;
    if (!openTrackingUrl && !stored.length) return { html: email.html, links: [], openTrackingUrl };
    const result = applyTracking(planTracking(email.html), {
      openPixelUrl: openTrackingUrl,
      ...(email.track_clicks
        ? { clickUrlFor: (token: string) => trackingUrl("click", token), newToken: () => stored[next++]?.token ?? "" }
        : {}),
    });
    return {
      html: result.html,
      links: result.links.map((l) => ({ url: l.url, trackingUrl: trackingUrl("click", l.token) })),
      openTrackingUrl,
    };
  }

  return {
    async rendered(email: EmailRow, copy: RecipientRow): Promise<components["schemas"]["RenderedEmail"]> {
      const h = await html(email, copy);
      return {
        messageId: email.id,
        recipient: copy.address,
        from: email.from_address,
        subject: email.subject,
        ...(email.text !== null ? { text: email.text } : {}),
        ...(h.html !== undefined ? { html: h.html } : {}),
        ...(h.openTrackingUrl ? { openTrackingUrl: h.openTrackingUrl } : {}),
        links: h.links,
      };
    },

    async compose(copy: RecipientRow): Promise<OutgoingCopy> {
      const email = (await queries.findEmail(copy.email_id)) as EmailRow;
      const h = await html(email, copy);
      const attachments = await queries.attachmentsOf(email.id);
      return composeCopy({
        from: email.from_address,
        fromName: email.from_name ?? undefined,
        to: copy.address,
        replyTo: JSON.parse(email.reply_to) as string[],
        subject: email.subject,
        text: email.text ?? undefined,
        html: h.html,
        headers: JSON.parse(email.headers) as Record<string, string>,
        attachments: attachments.map((a) => ({
          filename: a.filename,
          contentType: a.content_type,
          content: a.content,
          contentId: a.content_id ?? undefined,
        })),
        messageId: copy.message_id,
        returnPath: verpAddress(copy.return_token, deps.bounceDomain),
        date: new Date(email.created_at),
      });
    },
  };
}

export type Renderer = ReturnType<typeof createRenderer>;
