/**
 * A recipient's copy as it is handed to its transport: the HTML with its tracked links (each one's
 * token signed for this copy and the link's number, X-EM-28) and its open pixel, the VERP return
 * path, the copy's Message-ID, and the attachments. `getRenderedEmail` shows exactly this.
 *
 * What every copy of a message shares is prepared once for the copies composed at the same time
 * (shared-loads.ts): the message's row, its HTML's tracking plan (made on the parsing thread, never
 * per copy) and its attachments decoded from base64 once. A copy then costs a pass over the plan's
 * links and an HMAC per tracked destination, run in slices of the event loop's time (time-slices.ts),
 * and holds the shared attachment bytes, not its own.
 */
import type { components } from "../../../generated/types/email.ts";
import { notFound } from "../../../server/domain/errors.ts";
import { composeCopy, verpAddress, type CopyAttachment, type OutgoingCopy } from "../mail/compose.ts";
import type { HtmlPlan } from "../mail/html-plan.ts";
import { encodeTextPart, LARGE_PART_CHARS, type RawPart } from "../mail/text-parts.ts";
import { applyTracking } from "../mail/tracking.ts";
import type { EmailRow, MessageStore, RecipientRow } from "../storage/messages.ts";
import { MAX_TRACKED_LINKS, type ClickTokens } from "./click-links.ts";
import { sharedLoads } from "./shared-loads.ts";
import { timeSlices } from "./time-slices.ts";

/** Click tokens signed in one job (an HMAC each): a job the event loop can afford between other work. */
const SIGNS_PER_JOB = 100;
/** The event loop's time the copies' compositions may take in one turn. */
const SLICE_MS = 5;

/** What the copies of one message share. */
interface PreparedMessage {
  email: EmailRow;
  /** The HTML's tracking plan, when the message tracks opens or clicks. */
  plan: HtmlPlan | undefined;
  /**
   * Per destination of the plan, its stored number (message_links): what its click tokens name.
   * Undefined for a message accepted before links were stored per message: its copies' tokens are
   * the ones stored per copy (email_links).
   */
  positions: Array<number | undefined> | undefined;
  /** The attachments, decoded once, when first asked for (a rendered view never needs them). */
  attachments(): Promise<CopyAttachment[]>;
  /** The text part as every copy sends it: encoded once here when large (text-parts.ts). */
  text(): Promise<string | RawPart | undefined>;
}

export function createRenderer(deps: {
  queries: MessageStore;
  trackingUrl: (kind: "open" | "click", token: string) => string;
  bounceDomain: string;
  clickTokens: ClickTokens;
  /** The tracking plan of an HTML body (html-plan.ts), made off the event loop (parse-thread.ts). */
  planHtml(html: string, maxLinks: number): Promise<HtmlPlan>;
}) {
  const { queries, trackingUrl, clickTokens } = deps;

  async function prepare(emailId: string): Promise<PreparedMessage> {
    const email = await queries.findEmail(emailId);
    // Purged since its copy was read (X-EM-25): a claimed copy's message never is.
    if (!email) throw notFound("No email with this id.");
    const stored = email.track_clicks && email.html !== null ? await queries.messageLinksOf(email.id) : [];
    // A message with click tracking and no stored destinations is of the earlier format (or has no
    // link to track): its copies' tokens were stored per copy, for every link, with no cap.
    const earlier = Boolean(email.track_clicks) && stored.length === 0;
    const tracks = email.html !== null && Boolean(email.track_opens || email.track_clicks);
    const plan = tracks ? await deps.planHtml(email.html!, earlier ? Number.POSITIVE_INFINITY : MAX_TRACKED_LINKS) : undefined;
    // By destination, not by index alone: a token must name the link its copy shows, whatever the
    // parser makes of the body now.
    const numbers = new Map(stored.map((l) => [l.url, l.position]));
    let decoded: Promise<CopyAttachment[]> | undefined;
    let text: Promise<string | RawPart | undefined> | undefined;
    return {
      email,
      plan,
      positions: earlier ? undefined : (plan?.urls ?? []).map((url) => numbers.get(url)),
      attachments: () =>
        (decoded ??= queries.attachmentsOf(email.id).then((rows) =>
          rows.map((a) => ({
            filename: a.filename,
            contentType: a.content_type,
            content: Buffer.from(a.content, "base64"),
            contentId: a.content_id ?? undefined,
          })),
        )),
      text: () => (text ??= encodedPart("text/plain; charset=utf-8", email.text ?? undefined)),
    };
  }

  /** A body as nodemailer gets it: as it is, or encoded here in the time slices when large (text-parts.ts). */
  async function encodedPart(contentType: string, body: string | undefined): Promise<string | RawPart | undefined> {
    return body !== undefined && body.length >= LARGE_PART_CHARS ? encodeTextPart(contentType, body, inSlices) : body;
  }
  const prepared = sharedLoads(prepare);
  const inSlices = timeSlices(SLICE_MS);

  type ClickUrl = (index: number, url: string) => string | undefined;

  /**
   * The copy's click URL of each destination, when the message tracks clicks. Signed SIGNS_PER_JOB
   * at a time, each batch a job of its own: a copy signs up to MAX_TRACKED_LINKS tokens.
   */
  async function clickUrls(m: PreparedMessage, copy: RecipientRow): Promise<ClickUrl | undefined> {
    const { email, positions } = m;
    if (!email.track_clicks || email.html === null) return undefined;
    if (positions) {
      const sign = clickTokens.signer(copy.id);
      const urls: Array<string | undefined> = [];
      for (let from = 0; from < positions.length; from += SIGNS_PER_JOB) {
        await inSlices(() => {
          for (let index = from; index < Math.min(from + SIGNS_PER_JOB, positions.length); index++) {
            const position = positions[index];
            urls[index] = position === undefined ? undefined : trackingUrl("click", sign(position));
          }
        });
      }
      return (index) => urls[index];
    }
    const tokens = new Map((await queries.legacyLinksOf(copy.id)).map((l) => [l.url, l.token]));
    return (_index, url) => {
      const token = tokens.get(url);
      return token === undefined ? undefined : trackingUrl("click", token);
    };
  }

  /** The copy's HTML with tracking applied, and its tracked links (synchronous: a job for the time slices). */
  function html(m: PreparedMessage, copy: RecipientRow, clickUrl: ClickUrl | undefined) {
    const { email, plan } = m;
    if (email.html === null) return { html: undefined, links: [], openTrackingUrl: undefined };
    const openTrackingUrl = email.track_opens ? trackingUrl("open", copy.open_token) : undefined;
    if (!plan || (!openTrackingUrl && !clickUrl)) return { html: email.html, links: [], openTrackingUrl };
    const result = applyTracking(email.html, plan, { openPixelUrl: openTrackingUrl, clickUrl });
    return { html: result.html, links: result.links, openTrackingUrl };
  }

  return {
    async rendered(email: EmailRow, copy: RecipientRow): Promise<components["schemas"]["RenderedEmail"]> {
      const h = await prepared.use(email.id, async (m) => {
        const clickUrl = await clickUrls(m, copy);
        return inSlices(() => html(m, copy, clickUrl));
      });
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

    /**
     * Composes the copy and runs `use` with it (the send). The message's shared parts stay held until
     * `use` settles, so the copies of one message in flight together share one decoded set of attachments.
     */
    compose<T>(copy: RecipientRow, use: (outgoing: OutgoingCopy) => Promise<T>): Promise<T> {
      return prepared.use(copy.email_id, async (m) => {
        const { email } = m;
        const [clickUrl, attachments, text] = await Promise.all([clickUrls(m, copy), m.attachments(), m.text()]);
        const h = await inSlices(() => html(m, copy, clickUrl));
        const htmlPart = await encodedPart("text/html; charset=utf-8", h.html);
        const outgoing = await inSlices(() =>
          composeCopy({
            from: email.from_address,
            fromName: email.from_name ?? undefined,
            to: copy.address,
            replyTo: JSON.parse(email.reply_to) as string[],
            subject: email.subject,
            text,
            html: htmlPart,
            headers: JSON.parse(email.headers) as Record<string, string>,
            attachments,
            messageId: copy.message_id,
            returnPath: verpAddress(copy.return_token, deps.bounceDomain),
            date: new Date(email.created_at),
          }),
        );
        return use(outgoing);
      });
    },

    /** Messages whose shared parts are held now (tests). */
    held: () => prepared.held(),
  };
}

export type Renderer = ReturnType<typeof createRenderer>;
