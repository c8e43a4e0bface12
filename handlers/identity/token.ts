/** Handlers of token: token, revoke, introspect. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const tokenHandlers: Pick<IdentityHandlers, "token" | "revoke" | "introspect"> = {
  token: notBuilt,
  revoke: notBuilt,
  introspect: notBuilt,
};
