/**
 * Bounce and complaint reports that arrive after acceptance (X-EM-17), applied only when they can
 * be tied to one copy without trusting the report's content: a DSN (RFC 3464) must come to the
 * copy's unguessable VERP address AND name that copy's recipient; an ARF (RFC 5965) must enclose a
 * Message-ID the service issued. Anything else is dropped (logged without content), so a forged
 * report cannot suppress anyone.
 */
import type { Transactor, Tx } from "../../../server/storage/transaction.ts";
import type { Logger } from "pino";
import { bounceTypeForStatus } from "../mail/reply.ts";
import type { InboundReport } from "../mail/inbound.ts";
import type { MessageStore, RecipientRow } from "../storage/messages.ts";
import { addressKey } from "./addresses.ts";
import type { Outcomes } from "./outcomes.ts";

export type Report = InboundReport;

/** ARF types that count as a complaint (suppress); others are recorded only. */
const COMPLAINT_TYPES = new Set(["abuse", "fraud"]);

export function createReports(deps: { transaction: Transactor; logger: Logger; queries: MessageStore; outcomes: Outcomes }) {
  const { transaction, queries, outcomes } = deps;
  const log = deps.logger.child({ component: "reports" });

  /**
   * A timeline note about a copy read before this transaction: its message may have been purged
   * since (X-EM-25), and then the note is dropped, as every late report is. The message is read
   * first, locked as the purge's order wants (lockEmail), so the note's insert cannot meet a message
   * deleted under it.
   */
  async function noteUnlessGone(trx: Tx, copy: RecipientRow, type: string, data: Record<string, unknown>): Promise<void> {
    if (!(await queries.lockEmail(copy.email_id, trx))) return log.info({ reason: "message_gone", recipientId: copy.id }, "report dropped");
    await outcomes.note(trx, copy, type, data);
  }

  async function dsn(report: Extract<Report, { kind: "dsn" }>): Promise<void> {
    const copy = await queries.recipientByReturnToken(report.token);
    if (!copy) return log.info({ reason: "unknown_token" }, "delivery status notification dropped");
    const names = (r: (typeof report.recipients)[number]) =>
      [r.recipient, r.originalRecipient].some((a) => a !== null && addressKey(a) === copy.address_key);
    const entry = report.recipients.find(names);
    if (!entry) return log.info({ reason: "recipient_mismatch", recipientId: copy.id }, "delivery status notification dropped");
    const action = entry.action.toLowerCase();
    const diagnostic = entry.diagnostic?.trim() || null;
    await transaction(async (trx) => {
      if (action === "failed") {
        const status = entry.status ?? "5.0.0";
        const bounceType = status.startsWith("5") ? bounceTypeForStatus(status) : "soft";
        await outcomes.apply(trx, copy.id, { kind: "bounced", bounceType, errorMessage: diagnostic ?? status, smtpStatus: entry.status });
      } else if (action === "delayed") {
        await noteUnlessGone(trx, copy, "email.delayed", {
          errorMessage: diagnostic ?? entry.status ?? "delayed",
          ...(entry.status ? { smtpStatus: entry.status } : {}),
        });
      } else if (action === "delivered" || action === "relayed" || action === "expanded") {
        await outcomes.apply(trx, copy.id, { kind: "delivered", smtpStatus: entry.status });
      }
    });
  }

  async function arf(report: Extract<Report, { kind: "arf" }>): Promise<void> {
    const copy = report.originalMessageId ? await queries.recipientByMessageId(report.originalMessageId) : undefined;
    if (!copy) return log.info({ reason: "unknown_message_id" }, "feedback report dropped");
    const feedbackType = report.feedbackType.toLowerCase();
    await transaction(async (trx) => {
      if (COMPLAINT_TYPES.has(feedbackType)) await outcomes.apply(trx, copy.id, { kind: "complained", feedbackType });
      else await noteUnlessGone(trx, copy, "email.feedback", { feedbackType });
    });
  }

  return {
    /** Applies one report; never throws (a report is not worth a crash). */
    async apply(report: Report): Promise<void> {
      try {
        if (report.kind === "dsn") await dsn(report);
        else await arf(report);
      } catch (err) {
        log.error({ err }, "applying a report failed");
      }
    },
  };
}

export type Reports = ReturnType<typeof createReports>;
