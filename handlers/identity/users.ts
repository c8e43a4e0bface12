/** Handlers of users: registerUser, getMe, updateMe, deleteMe. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const usersHandlers: Pick<IdentityHandlers, "registerUser" | "getMe" | "updateMe" | "deleteMe"> = {
  registerUser: notBuilt,
  getMe: notBuilt,
  updateMe: notBuilt,
  deleteMe: notBuilt,
};
