/**
 * The accounts area: organizations, users (with their events), applications, client secrets and
 * the deployment's social providers. The OAuth area builds on these functions (sign-in, social
 * sign-in, client authentication); the handlers of /api/users, /api/organizations,
 * /api/applications, /api/providers and /dashboard call them.
 */
import type { ClientLookup } from "../../storage/client-lookup.ts";
import type { IdentityContext } from "../context.ts";
import { createApplications } from "./applications.ts";
import { createProviders } from "./providers.ts";
import { createUsers } from "./users.ts";

/** `storage`: the query objects the area needs beyond the context's, built by service.ts. */
export function createAccountsArea(ctx: IdentityContext, storage: { findClient: ClientLookup }) {
  const providers = createProviders(ctx.config);
  const users = createUsers(ctx);
  const applications = createApplications(ctx, providers, storage.findClient);
  return {
    // Users
    registerUser: users.registerUser,
    checkRegistrationRate: users.checkRegistrationRate,
    findUserByEmail: users.findUserByEmail,
    findUserById: users.findUserById,
    verifyPassword: users.verifyPassword,
    updateProfile: users.updateProfile,
    deleteUser: users.deleteUser,
    linkSocialIdentity: users.linkSocialIdentity,
    findOrCreateSocialUser: users.findOrCreateSocialUser,
    linkProvenSocialIdentity: users.linkProvenSocialIdentity,
    addApplicationUser: users.addApplicationUser,

    // Organizations
    findOrganization: (id: string) => ctx.core.findOrganization(id),

    // Applications and client secrets
    authenticateClient: applications.authenticateClient,
    findApplicationByClientId: (clientId: string) => ctx.core.findApplicationByClientId(clientId),
    findApplicationById: (id: string) => ctx.core.findApplicationById(id),
    /** Whether any application accepts `origin` for browser calls (CORS, X-ID-CORS-1): `token` for the token endpoints. */
    anyApplicationAcceptsOrigin: (origin: string, token: boolean) => ctx.core.anyApplicationAcceptsOrigin(origin, token),
    ownedApplication: applications.owned,
    listApplications: applications.list,
    createApplication: applications.create,
    updateApplication: applications.update,
    deleteApplication: applications.remove,
    regenerateClientSecret: applications.regenerateSecret,

    // Social providers
    configuredProviders: providers.configuredProviders,
    findProvider: providers.findProvider,
    publicProviders: providers.publicProviders,
  };
}

export type AccountsArea = ReturnType<typeof createAccountsArea>;
