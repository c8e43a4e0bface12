/** Handlers of account pages: signupPage, signup, logoutPage, logout. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const accountPagesHandlers: Pick<IdentityHandlers, "signupPage" | "signup" | "logoutPage" | "logout"> = {
  signupPage: notBuilt,
  signup: notBuilt,
  logoutPage: notBuilt,
  logout: notBuilt,
};
