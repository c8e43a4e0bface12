/**
 * Revoking a grant (a refresh family and everything issued from it, X-ID-TOK-5) and recording it
 * in the audit log (X-ID-AUD-1) in the same transaction. The conditional update decides: only the
 * call that revoked a live grant records `token.revoked`, so concurrent revocations record once.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { Transactor } from "../../../../server/storage/transaction.ts";
import type { GrantStore } from "../../storage/grants.ts";
import type { Audit, RequestOrigin } from "../audit.ts";

/** Why a grant ended: the client asked (RFC 7009), a rotated refresh token came back, or a used code was replayed. */
export type GrantRevocationReason = "revocation" | "refresh_token_reuse" | "code_replay";

export interface GrantRef {
  id: string;
  application_id: string;
  user_id: string;
}

export function createGrantRevoker(deps: { grants: GrantStore; clock: Clock; transaction: Transactor; audit: Audit }) {
  const { grants, clock, transaction, audit } = deps;
  return async function revokeGrant(grant: GrantRef, reason: GrantRevocationReason, origin?: RequestOrigin): Promise<void> {
    await transaction(async (trx) => {
      if (!(await grants.revokeGrant(grant.id, clock.now().toISOString(), trx))) return;
      await audit.record(trx, {
        type: "token.revoked",
        // The client's own request is the user's (through their application); reuse and replay are the service's own rule.
        actor: reason === "revocation" ? { type: "user", id: grant.user_id } : { type: "system" },
        userId: grant.user_id,
        applicationId: grant.application_id,
        origin,
        details: { tokenType: "refresh_token", reason },
      });
    });
  };
}

export type GrantRevoker = ReturnType<typeof createGrantRevoker>;
