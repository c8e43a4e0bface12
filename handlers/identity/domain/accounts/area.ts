/** The accounts area: organizations, users (with their events), applications and client secrets. */
import type { IdentityContext } from "../context.ts";

export function createAccountsArea(ctx: IdentityContext) {
  void ctx;
  return {};
}

export type AccountsArea = ReturnType<typeof createAccountsArea>;
