/**
 * Opens and clicks (EM-10): recorded only when the message asked for tracking and the copy was
 * actually handed over (a `Queued`, `Suppressed` or `Failed` copy records nothing, though its
 * tokens exist from acceptance on). The first open of a copy and the first click on each of its
 * links are events; a click always goes to a destination stored with its message (no open redirect).
 * A click token is signed and names the copy and the link's number (X-EM-28, click-links.ts); a
 * token of the earlier format is looked up where it was stored, per copy and link.
 */
import type { Transactor, Tx } from "../../../server/storage/transaction.ts";
import type { Clock } from "../../../server/clock.ts";
import type { LockedEmail, MessageStore, RecipientRow } from "../storage/messages.ts";
import type { ClickTarget, ClickTokens } from "./click-links.ts";
import { eventData, type EventPublisher } from "./events.ts";
import type { Outcomes } from "./outcomes.ts";

const HANDED_OVER = new Set(["Sent", "Delivered", "Bounced", "Complained"]);

export function createTracking(deps: {
  transaction: Transactor;
  clock: Clock;
  queries: MessageStore;
  outcomes: Outcomes;
  events: EventPublisher;
  clickTokens: ClickTokens;
}) {
  const { transaction, clock, queries, outcomes, events, clickTokens } = deps;

  async function record(
    trx: Tx,
    copy: RecipientRow,
    email: LockedEmail,
    type: "email.opened" | "email.clicked",
    url?: string,
  ): Promise<void> {
    const at = clock.now().toISOString();
    const eventId = await events.publish(trx, type, eventData(email, copy, type, url), at, Boolean(email.test_mode));
    await queries.insertTimeline([outcomes.timeline(copy, type, at, url ? { url } : {}, eventId)], trx);
    await queries.touchUpdatedAt(email.id, at, trx);
  }

  async function signedClick(target: ClickTarget): Promise<string | undefined> {
    return transaction(async (trx) => {
      // The copy or the message gone: purged (X-EM-25), an unknown link now. The message is locked
      // before the copy is (lockEmail: the purge's order; the click's row locks the copy's key).
      const copy = await queries.findRecipient(target.copyId, trx);
      const email = copy && (await queries.lockEmail(copy.email_id, trx));
      if (!copy || !email) return undefined;
      const url = await queries.messageLink(email.id, target.position, trx);
      if (url === undefined) return undefined;
      if (email.track_clicks && HANDED_OVER.has(copy.status)) {
        const at = clock.now().toISOString();
        if (await queries.firstLinkClick(copy.id, target.position, at, trx)) {
          await queries.markClicked(copy.id, at, trx);
          await record(trx, copy, email, "email.clicked", url);
        }
      }
      return url;
    });
  }

  /** A token of the earlier format, stored per copy and link: kept working until retention purges its message. */
  async function legacyClick(token: string): Promise<string | undefined> {
    return transaction(async (trx) => {
      const link = await queries.legacyLinkByToken(token, trx);
      if (!link) return undefined;
      // The copy or the message gone between the reads: purged (X-EM-25), an unknown link now.
      // The message is locked before the link and the copy are (lockEmail: the purge's order).
      const copy = await queries.findRecipient(link.recipient_id, trx);
      const email = copy && (await queries.lockEmail(copy.email_id, trx));
      if (!copy || !email) return undefined;
      if (email.track_clicks && HANDED_OVER.has(copy.status)) {
        const at = clock.now().toISOString();
        if (await queries.legacyFirstClick(token, at, trx)) {
          await queries.markClicked(copy.id, at, trx);
          await record(trx, copy, email, "email.clicked", link.url);
        }
      }
      return link.url;
    });
  }

  return {
    /** An open of the copy with this token, if it counts. Always answered with the pixel. */
    async open(token: string): Promise<void> {
      await transaction(async (trx) => {
        const copy = await queries.recipientByOpenToken(token, trx);
        if (!copy || !HANDED_OVER.has(copy.status)) return;
        // The message before the copy (lockEmail: the purge's lock order). Gone between the two
        // reads: the retention purge deleted the message (X-EM-25).
        const email = await queries.lockEmail(copy.email_id, trx);
        if (!email?.track_opens) return;
        if (await queries.firstOpen(copy.id, clock.now().toISOString(), trx)) await record(trx, copy, email, "email.opened");
      });
    },

    /** The destination of a click token (undefined: unknown token), recording the click if it counts. */
    async click(token: string): Promise<string | undefined> {
      const target = clickTokens.verify(token);
      return target ? signedClick(target) : legacyClick(token);
    },
  };
}

export type Tracking = ReturnType<typeof createTracking>;
