/** Handlers of userinfo: userInfo. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const userinfoHandlers: Pick<IdentityHandlers, "userInfo"> = {
  userInfo: notBuilt,
};
