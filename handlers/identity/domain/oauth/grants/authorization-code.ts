/**
 * `authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6, X-ID-TOK-1). The code is consumed by one
 * conditional UPDATE, the first statement of the grant's one short transaction: of concurrent
 * exchanges exactly one wins. A replay revokes what the code produced (RFC 9700 §4.14).
 */
import type { Clock } from "../../../../../server/clock.ts";
import { secretStorageKey } from "../../../../../server/security/tokens.ts";
import type { Application } from "../../../storage/applications.ts";
import type { GrantStore } from "../../../storage/grants.ts";
import type { CodeRow } from "../../../storage/schema.ts";
import { endedByDisabling } from "../../token-liveness.ts";
import { invalidGrant, invalidRequest, OAuthError } from "../errors.ts";
import { tokenResourceRefusal } from "../resource-indicators.ts";
import { grantEndsAt } from "../grant-end.ts";
import { isValidVerifier, verifierMatches } from "../pkce.ts";
import type { Grant, TokenBinding } from "./grant.ts";
import { iso, type TokenIssuer, type TokenResponse } from "./issue.ts";
import { amrOf } from "../../factors/levels.ts";
import type { GrantRevoker } from "../grant-revocation.ts";

const codeInvalid = () => invalidGrant("The authorization code is invalid, expired or already used.");

/** RFC 7636 §4.6, plus the downgrade rule: a verifier for a code issued without a challenge is refused. */
function checkPkce(code: CodeRow, verifier: string | undefined, app: Application): void {
  if (!code.code_challenge) {
    if (verifier !== undefined) throw invalidGrant("code_verifier was sent, but the authorization request had no code_challenge.");
    if (app.clientType === "public") throw invalidGrant("Public clients must use PKCE.");
    return;
  }
  if (verifier === undefined) throw invalidGrant("code_verifier is required: the authorization request had a code_challenge.");
  if (!verifierMatches(verifier, code.code_challenge, code.code_challenge_method === "plain" ? "plain" : "S256")) {
    throw invalidGrant("code_verifier does not match the code_challenge.");
  }
}

export function createAuthorizationCodeGrant(deps: { grants: GrantStore; clock: Clock; issue: TokenIssuer; revoker: GrantRevoker }): Grant {
  const { grants, clock, issue, revoker } = deps;
  /** A replayed code ends its grant (RFC 6749 §4.1.2), recorded as the service's own rule. */
  const revokeGrant = (code: { grant_id: string; application_id: string; user_id: string }) =>
    revoker({ id: code.grant_id, application_id: code.application_id, user_id: code.user_id }, "code_replay");

  async function handle(app: Application, form: Readonly<Record<string, string>>, binding?: TokenBinding): Promise<TokenResponse> {
    const verifier = form.code_verifier;
    if (verifier !== undefined && !isValidVerifier(verifier)) {
      throw invalidRequest("code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.");
    }
    const now = clock.now().getTime();
    const found = await grants.findCodeForExchange(secretStorageKey(form.code!));
    const code = found?.code;
    if (!code || code.application_id !== app.id) throw codeInvalid();
    if (code.consumed_at) {
      await revokeGrant(code);
      throw codeInvalid();
    }
    if (code.expires_at <= iso(now)) throw codeInvalid();
    // Issued before the application was last disabled: ended for good (X-ID-TOK-5).
    if (endedByDisabling(code.created_at, app)) throw codeInvalid();
    if (code.redirect_uri !== form.redirect_uri) throw invalidGrant("redirect_uri does not match the one of the authorization request.");
    checkPkce(code, verifier, app);
    const targetRefusal = tokenResourceRefusal(form.resource, code.resource);
    if (targetRefusal) throw new OAuthError("invalid_target", targetRefusal);
    const user = found.user;
    if (!user) throw codeInvalid();

    const scopes: string[] = JSON.parse(code.scopes);
    const authTime = Math.floor(Date.parse(code.auth_time) / 1000);
    const answer = await issue.mint({
      grantId: code.grant_id,
      user,
      clientId: app.clientId,
      scopes,
      grantScopes: scopes,
      authTime,
      nonce: code.nonce ?? undefined,
      amr: amrOf(code.amr),
      resource: code.resource,
      jkt: binding?.jkt,
      sid: code.sid ?? undefined,
    });
    const refresh = answer.refresh_token ? issue.refreshRow(answer.refresh_token, code.grant_id, null, now) : undefined;
    const won = await grants.redeemCode({
      codeHash: code.code_hash,
      now: iso(now),
      grant: {
        id: code.grant_id,
        application_id: app.id,
        user_id: user.id,
        scopes: code.scopes,
        auth_time: code.auth_time,
        created_at: iso(now),
        revoked_at: null,
        ends_at: grantEndsAt(now, refresh?.expires_at),
        amr: code.amr,
        resource: code.resource ?? null,
        // X-ID-DPOP-4: a public client's refresh tokens are bound to the key; a confidential client's to its authentication.
        dpop_jkt: binding && app.clientType === "public" ? binding.jkt : null,
        sid: code.sid ?? null,
      },
      refresh,
    });
    if (!won) {
      // Lost the race, or the code expired meanwhile: either way it is used up; a replay revokes.
      if ((await grants.findCode(code.code_hash))?.consumed_at) await revokeGrant(code);
      throw codeInvalid();
    }
    return answer;
  }

  return { grantType: "authorization_code", parameters: ["code", "redirect_uri"], handle };
}
