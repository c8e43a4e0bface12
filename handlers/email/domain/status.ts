/**
 * The status machine of a recipient's copy (spec/email/models.tsp, EmailStatus) and the message
 * status derived from its copies. Only moves the contract lists are allowed; anything else (a
 * second bounce, a late "delivered" after a complaint) changes nothing, so reports that arrive
 * twice or out of order are harmless.
 */
import type { EmailStatus } from "../storage/schema.ts";

export type { EmailStatus };

const ALLOWED: Record<EmailStatus, readonly EmailStatus[]> = {
  Queued: ["Sent", "Delivered", "Bounced", "Failed", "Suppressed"],
  // In flight: the attempt's answer, or back to Queued when it is retried.
  Sent: ["Queued", "Delivered", "Bounced", "Complained", "Failed", "Suppressed"],
  // A bounce report may arrive after the receiving server accepted the message (DSN), and a complaint.
  Delivered: ["Bounced", "Complained"],
  Bounced: [],
  Complained: [],
  Suppressed: [],
  Failed: [],
};

export const canMove = (from: EmailStatus, to: EmailStatus): boolean => ALLOWED[from].includes(to);

/** Copies still waiting for an attempt or in one. */
export const isPending = (s: EmailStatus): boolean => s === "Queued" || s === "Sent";

/**
 * The message status (X-EM-6): with one recipient, that recipient's; with several, the first of
 * this list that any recipient has: work in progress first, then the most severe outcome, so
 * `Delivered` means every recipient got it.
 */
const MESSAGE_ORDER: readonly EmailStatus[] = ["Queued", "Sent", "Failed", "Bounced", "Complained", "Suppressed", "Delivered"];

export function messageStatus(recipients: readonly EmailStatus[]): EmailStatus {
  for (const s of MESSAGE_ORDER) if (recipients.includes(s)) return s;
  return "Queued";
}
