/**
 * OpenID Connect Back-Channel Logout 1.0, the queueing half (X-ID-LOGOUT-8): when sessions end, each
 * application they signed into that registered a `backchannelLogoutUri` gets one logout token,
 * queued in the transaction that ends the sessions (the outbox), so a session is never ended
 * without its logout tokens queued, nor a token queued for a session end that rolled back.
 * The session's applications are read before its row is deleted: they go with it.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import { uuidv7 } from "../../../../server/ids.ts";
import type { BackchannelLogoutStore, LogoutTarget } from "../../storage/backchannel-logouts.ts";
import { sessionSid } from "./session-id.ts";

export function createBackchannelLogout(deps: { store: BackchannelLogoutStore; clock: Clock; wake: () => void }) {
  const { store, clock } = deps;
  return {
    /** X-ID-LOGOUT-8: records that the session signed into the application (a code was issued for it). */
    recordSignIn: (sessionIdHash: string, applicationId: string) =>
      store.recordSignIn(sessionIdHash, applicationId, clock.now().toISOString()),

    /** Who must be told when these sessions end; read in the ending transaction, before the sessions are deleted. */
    targetsOf: (sessionIdHashes: string[], tx: Tx) => store.targetsOf(sessionIdHashes, tx),
    /** Who must be told when every session of the user ends. */
    targetsOfUser: (userId: string, tx: Tx) => store.targetsOfUser(userId, tx),

    /** Queues one logout token per target for `userId`, in `tx`; the dispatcher wakes once it commits. */
    async queue(tx: Tx, userId: string, targets: LogoutTarget[]): Promise<void> {
      if (!targets.length) return;
      const now = clock.now();
      await store.insert(
        targets.map((t) => ({
          id: uuidv7(now.getTime()),
          application_id: t.applicationId,
          user_id: userId,
          sid: sessionSid(t.sessionIdHash),
          status: "pending" as const,
          attempts: 0,
          next_attempt_at: now.toISOString(),
          lease_token: null,
          lease_expires_at: null,
          last_error: null,
          created_at: now.toISOString(),
          finished_at: null,
        })),
        tx,
      );
      store.onCommit(tx, deps.wake);
    },
  };
}

export type BackchannelLogout = ReturnType<typeof createBackchannelLogout>;
