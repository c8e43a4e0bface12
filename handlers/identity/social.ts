/** Handlers of social: startSocialSignIn, socialSignInCallback. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const socialHandlers: Pick<IdentityHandlers, "startSocialSignIn" | "socialSignInCallback"> = {
  startSocialSignIn: notBuilt,
  socialSignInCallback: notBuilt,
};
