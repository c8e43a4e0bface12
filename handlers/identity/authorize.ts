/** Handlers of authorize: authorize, submitAuthorization. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const authorizeHandlers: Pick<IdentityHandlers, "authorize" | "submitAuthorization"> = {
  authorize: notBuilt,
  submitAuthorization: notBuilt,
};
