/** What identity handlers are given, and the typed handler map every operation must fill. */
import type { HandlerMap } from "../../server/http/handler-types.ts";
import type { operations } from "../../generated/types/identity.ts";
import type { AdminPrincipal, UserPrincipal } from "./domain/access-tokens.ts";
import type { IdentityContext } from "./domain/context.ts";
import type { AccountsArea } from "./domain/accounts/accounts-area.ts";
import type { OAuthArea } from "./domain/oauth/oauth-area.ts";
import type { WebhooksArea } from "./domain/webhooks/webhooks-area.ts";

export interface IdentityDeps {
  ctx: IdentityContext;
  accounts: AccountsArea;
  oauth: OAuthArea;
  webhooks: WebhooksArea;
}

/** A session principal (SessionCookie) is defined by the OAuth area. */
export type SessionPrincipal = Awaited<ReturnType<OAuthArea["authenticateSession"]>>;
export type IdentityPrincipal = UserPrincipal | AdminPrincipal | NonNullable<SessionPrincipal> | undefined;

export type IdentityHandlers = HandlerMap<operations, IdentityPrincipal, IdentityDeps>;
export type { operations };

/** Placeholder for an operation whose area has not landed yet: 501 in the documented shape. */
export const notBuilt = async (): Promise<never> => {
  const { HttpProblem } = await import("../../server/http/problem.ts");
  throw new HttpProblem(501, "not_implemented", "This operation is specified but not implemented yet.");
};

/** The admin principal of an AdminAuth operation (openapi-backend has refused anything else). */
export function adminOf(auth: IdentityPrincipal): AdminPrincipal {
  if (auth?.kind !== "admin") throw new Error("AdminAuth operation reached without an admin principal");
  return auth;
}

/** The user principal of a UserAuth operation. */
export function userOf(auth: IdentityPrincipal): UserPrincipal {
  if (auth?.kind !== "user") throw new Error("UserAuth operation reached without a user principal");
  return auth;
}
