/** The OAuth area: hosted pages and sessions, authorization requests, codes, tokens, social sign-in. */
import type { IdentityContext } from "../context.ts";
import type { AccountsArea } from "../accounts/area.ts";

export function createOAuthArea(ctx: IdentityContext, accounts: AccountsArea) {
  void ctx;
  void accounts;
  return {
    /** Security handler of `SessionCookie`: the signed-in session, or undefined (never throws). */
    async authenticateSession(_headers: Record<string, string | string[] | undefined>): Promise<undefined> {
      return undefined;
    },
  };
}

export type OAuthArea = ReturnType<typeof createOAuthArea>;
