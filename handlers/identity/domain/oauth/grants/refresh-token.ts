/**
 * `refresh_token` (RFC 6749 §6, X-ID-TOK-2): rotation by one conditional UPDATE that also stores
 * the answer, sealed, for the grace window; reuse outside it revokes the family (RFC 9700 §4.14.2).
 */
import type { Clock } from "../../../../../server/clock.ts";
import { secretStorageKey } from "../../../../../server/security/tokens.ts";
import type { Application } from "../../../storage/applications.ts";
import type { GrantStore } from "../../../storage/grants.ts";
import type { GrantRow } from "../../../storage/schema.ts";
import { grantLive } from "../../token-liveness.ts";
import { invalidGrant, invalidScope, OAuthError } from "../errors.ts";
import { tokenResourceRefusal } from "../resource-indicators.ts";
import { movedGrantEnd } from "../grant-end.ts";
import { parseScopes } from "../scopes.ts";
import type { Secrets } from "../secrets.ts";
import type { Grant, TokenBinding } from "./grant.ts";
import { iso, REFRESH_TOKEN_PREFIX, type TokenIssuer, type TokenResponse } from "./issue.ts";
import { amrOf } from "../../factors/levels.ts";
import type { GrantRevoker } from "../grant-revocation.ts";

export const REFRESH_GRACE_SECONDS = 30; // X-ID-TOK-2: concurrent retry of the previous token

const refreshInvalid = () => invalidGrant("The refresh token is invalid, expired, revoked or already used.");

export function createRefreshTokenGrant(deps: {
  grants: GrantStore;
  clock: Clock;
  issue: TokenIssuer;
  secrets: Secrets;
  revokeGrant: GrantRevoker;
}): Grant {
  const { grants, clock, issue, secrets, revokeGrant } = deps;

  async function handle(app: Application, form: Readonly<Record<string, string>>, binding?: TokenBinding): Promise<TokenResponse> {
    const now = clock.now().getTime();
    const found = await grants.findRefreshForRotation(secretStorageKey(form.refresh_token!, REFRESH_TOKEN_PREFIX));
    if (!found) throw refreshInvalid();
    const { row, grant } = found;
    if (!grant || grant.application_id !== app.id) throw refreshInvalid();
    if (!grantLive(grant, app) || row.expires_at <= iso(now)) throw refreshInvalid();
    // X-ID-DPOP-4: a bound refresh token is used only with a proof of its key (RFC 9449 §5).
    if (grant.dpop_jkt && binding?.jkt !== grant.dpop_jkt)
      throw invalidGrant("This refresh token is bound to a DPoP key: send a DPoP proof signed with that key.");

    const grantScopes: string[] = JSON.parse(grant.scopes);
    const requested = form.scope !== undefined ? parseScopes(form.scope) : grantScopes;
    if (form.scope !== undefined && requested.length === 0) throw invalidScope("scope must not be empty.");
    const wider = requested.filter((s) => !grantScopes.includes(s));
    if (wider.length) throw invalidScope(`The requested scope exceeds the scope granted: ${wider.join(" ")}.`);
    const targetRefusal = tokenResourceRefusal(form.resource, grant.resource);
    if (targetRefusal) throw new OAuthError("invalid_target", targetRefusal);

    if (row.used_at) return retryOrRevoke(row.id, grant, now);

    const user = found.user;
    if (!user) throw refreshInvalid();
    const authTime = Math.floor(Date.parse(grant.auth_time) / 1000);
    const answer = await issue.mint({
      grantId: grant.id,
      user,
      clientId: app.clientId,
      scopes: requested,
      grantScopes,
      authTime,
      amr: amrOf(grant.amr),
      resource: grant.resource,
      jkt: binding?.jkt,
      sid: grant.sid ?? undefined,
    });
    const child = issue.refreshRow(answer.refresh_token!, grant.id, row.id, now);
    const won = await grants.rotateRefresh({
      rowId: row.id,
      parentId: row.parent_id,
      child,
      sealedAnswer: secrets.seal(JSON.stringify(answer)),
      now: iso(now),
      grantEndsAt: movedGrantEnd(grant.ends_at, child.expires_at),
    });
    return won ? answer : retryOrRevoke(row.id, grant, now);
  }

  /**
   * A rotated token came back. Within 30 seconds, while its successor is still unused, it is a
   * concurrent retry (a lost response, two tabs): the same answer again. Otherwise a copy is in
   * someone else's hands: revoke the family.
   */
  async function retryOrRevoke(rowId: string, grant: GrantRow, now: number): Promise<TokenResponse> {
    const row = await grants.findRefreshById(rowId);
    const child = row?.child_id ? await grants.findRefreshById(row.child_id) : undefined;
    const inGrace = row?.used_at && now - Date.parse(row.used_at) <= REFRESH_GRACE_SECONDS * 1000;
    if (row && inGrace && child && !child.used_at && row.rotation_answer) {
      const opened = secrets.open(row.rotation_answer);
      if (opened) return JSON.parse(opened) as TokenResponse;
    }
    await revokeGrant(grant, "refresh_token_reuse");
    throw refreshInvalid();
  }

  return { grantType: "refresh_token", parameters: ["refresh_token"], handle };
}
