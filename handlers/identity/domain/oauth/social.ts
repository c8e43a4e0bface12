/** Social sign-in (ID-SOC-1): built last; the login page shows no provider button until then. */
import type { IdentityContext } from "../context.ts";
import type { AccountsArea } from "../accounts/area.ts";
import type { OAuthQueries } from "../../storage/oauth-queries.ts";
import type { Secrets } from "./secrets.ts";

export function createSocial(deps: { ctx: IdentityContext; accounts: AccountsArea; q: OAuthQueries; secrets: Secrets }) {
  void deps;
  return {};
}

export type Social = ReturnType<typeof createSocial>;
