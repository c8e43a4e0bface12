/** Handlers of providers: listProviders. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const providersHandlers: Pick<IdentityHandlers, "listProviders"> = {
  listProviders: notBuilt,
};
