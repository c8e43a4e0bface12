/**
 * `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4, §3.5; X-ID-DEV-5, X-ID-DEV-6).
 * Each poll is recorded first, so polling sooner than the interval is `slow_down` whatever the
 * state; then the state answers: `authorization_pending`, `access_denied`, `expired_token`, or
 * the tokens. The approved authorization is redeemed by one conditional UPDATE, the first
 * statement of the transaction that stores its grant: of concurrent polls exactly one gets tokens.
 */
import type { Clock } from "../../../../../server/clock.ts";
import type { Transactor } from "../../../../../server/storage/transaction.ts";
import { uuidv7 } from "../../../../../server/ids.ts";
import type { Application } from "../../../storage/applications.ts";
import type { DeviceAuthorizationStore } from "../../../storage/device-authorizations.ts";
import type { UserRow } from "../../../storage/schema.ts";
import { endedByDisabling } from "../../token-liveness.ts";
import { amrOf } from "../../factors/levels.ts";
import { invalidGrant, OAuthError } from "../errors.ts";
import { grantEndsAt } from "../grant-end.ts";
import { deviceCodeKey, SLOW_DOWN_SECONDS } from "../device/device-authorizations.ts";
import type { Grant, TokenBinding } from "./grant.ts";
import { iso, type TokenIssuer, type TokenResponse } from "./issue.ts";

const unknownCode = () => invalidGrant("The device code is invalid, or its tokens were already issued.");

export function createDeviceCodeGrant(deps: {
  store: DeviceAuthorizationStore;
  findUser: (id: string) => Promise<UserRow | undefined>;
  transaction: Transactor;
  clock: Clock;
  issue: TokenIssuer;
}): Grant {
  const { store, findUser, transaction, clock, issue } = deps;

  async function handle(app: Application, form: Readonly<Record<string, string>>, binding?: TokenBinding): Promise<TokenResponse> {
    const row = await store.findByDeviceCodeHash(deviceCodeKey(form.device_code!));
    if (!row || row.application_id !== app.id || row.status === "redeemed") throw unknownCode();
    const now = clock.now().getTime();
    if (row.expires_at <= iso(now) || endedByDisabling(row.created_at, app))
      throw new OAuthError("expired_token", "The device code has expired: start again.");
    if ((await store.poll(row, iso(now), now, SLOW_DOWN_SECONDS)) === "slow_down")
      throw new OAuthError("slow_down", `Polling too fast: wait ${row.interval_seconds + SLOW_DOWN_SECONDS} seconds between requests.`);
    if (row.status === "pending") throw new OAuthError("authorization_pending", "The user has not approved the request yet.");
    if (row.status === "denied") throw new OAuthError("access_denied", "The user denied the request.");

    const user = row.user_id ? await findUser(row.user_id) : undefined;
    if (!user) throw unknownCode();
    const scopes: string[] = JSON.parse(row.scopes);
    const grantId = uuidv7(now);
    const answer = await issue.mint({
      grantId,
      user,
      clientId: app.clientId,
      scopes,
      grantScopes: scopes,
      authTime: Math.floor(Date.parse(row.auth_time ?? row.decided_at ?? iso(now)) / 1000),
      amr: amrOf(row.amr),
      // X-ID-DEV-11: the resource the device asked for is the access tokens' `aud`, refreshes included.
      resource: row.resource ?? null,
      jkt: binding?.jkt,
    });
    const refresh = answer.refresh_token ? issue.refreshRow(answer.refresh_token, grantId, null, now) : undefined;
    const won = await transaction((tx) =>
      store.redeem(
        {
          id: row.id,
          grant: {
            id: grantId,
            application_id: app.id,
            user_id: user.id,
            scopes: row.scopes,
            auth_time: row.auth_time ?? iso(now),
            created_at: iso(now),
            revoked_at: null,
            ends_at: grantEndsAt(now, refresh?.expires_at),
            amr: row.amr,
            resource: row.resource ?? null,
            // X-ID-DPOP-4: a public client's refresh tokens are bound to the key; a confidential client's to its authentication.
            dpop_jkt: binding && app.clientType === "public" ? binding.jkt : null,
          },
          refresh,
        },
        tx,
      ),
    );
    if (!won) throw unknownCode();
    return answer;
  }

  return { grantType: "urn:ietf:params:oauth:grant-type:device_code", parameters: ["device_code"], handle };
}
