/** Handlers of /api/providers: the deployment's social providers, without their secrets. */
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";

export const providersHandlers: Pick<IdentityHandlers, "listProviders"> = {
  async listProviders({ auth }, { accounts }) {
    adminOf(auth);
    return { status: 200, body: { items: accounts.publicProviders() } };
  },
};
