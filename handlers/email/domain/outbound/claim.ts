/**
 * Outbound's claim phase: due copies leased to this dispatcher (the webhook engine's protocol: a copy
 * whose holder died is claimed again when its lease runs out). The copies of one claim share its
 * lease token.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";
import type { MessageStore, RecipientRow } from "../../storage/messages.ts";

/** A copy this dispatcher holds the lease of. */
export type ClaimedCopy = RecipientRow & { lease_token: string };

/** Claims up to `limit` copies due by the injected clock, leased for `leaseMs`. */
export function copyClaimer(options: {
  queries: Pick<MessageStore, "claimDue">;
  clock: Clock;
  leaseMs: number;
}): (limit: number) => Promise<ClaimedCopy[]> {
  const { queries, clock, leaseMs } = options;
  return async (limit) => {
    const now = clock.now().getTime();
    const token = randomUUID();
    const rows = await queries.claimDue(new Date(now).toISOString(), token, new Date(now + leaseMs).toISOString(), limit);
    return rows.map((r) => ({ ...r, lease_token: token }));
  };
}
