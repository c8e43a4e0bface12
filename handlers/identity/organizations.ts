/** Handlers of organizations: getCurrentOrganization. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const organizationsHandlers: Pick<IdentityHandlers, "getCurrentOrganization"> = {
  getCurrentOrganization: notBuilt,
};
