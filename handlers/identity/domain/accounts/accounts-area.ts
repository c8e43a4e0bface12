/**
 * The accounts area: organizations, users (with their events), applications, client secrets and
 * the deployment's social providers. The OAuth area builds on these functions (sign-in, social
 * sign-in, client authentication); the handlers of /api/users, /api/organizations,
 * /api/applications, /api/providers and /dashboard call them.
 */
import type { IdentityContext } from "../context.ts";
import { createApplications } from "./applications.ts";
import { type BootstrapInput, createOrganizationWithAdmin } from "./bootstrap.ts";
import { createProviders, type SocialProviderConfig } from "./providers.ts";
import { createUsers } from "./users.ts";
import { createOrganizationUsers } from "./organization-users.ts";
import { createPasswordResets } from "./password-reset.ts";
import { createEmailVerification } from "./email-verification.ts";

/** `settings.socialProviders`: the deployment's (IDENTITY_SOCIAL_PROVIDERS). */
export function createAccountsArea(ctx: IdentityContext, settings: { socialProviders: readonly SocialProviderConfig[] }) {
  const providers = createProviders(settings.socialProviders);
  const emailVerification = createEmailVerification(ctx);
  const users = createUsers(ctx, emailVerification);
  const applications = createApplications(ctx, providers);
  const passwordResets = createPasswordResets(ctx);
  const organizationUsers = createOrganizationUsers(ctx, {
    forcePasswordResetIn: passwordResets.forcePasswordResetIn,
    resendVerificationIn: emailVerification.resendVerificationIn,
  });
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
    findOrganization: (id: string) => ctx.storage.organizations.find(id),
    /** An organization and its admin in one transaction, as `npm run admin -- identity create-org` makes them. */
    createOrganizationWithAdmin: (input: BootstrapInput) => createOrganizationWithAdmin(ctx.storage, ctx.clock, input),

    // Applications and client secrets
    authenticateClient: applications.authenticateClient,
    findApplicationByClientId: (clientId: string) => ctx.storage.applications.findByClientId(clientId),
    findApplicationById: (id: string) => ctx.storage.applications.findById(id),
    /** Whether any application accepts `origin` for browser calls (CORS, X-ID-CORS-1): `token` for the token endpoints. */
    anyApplicationAcceptsOrigin: (origin: string, token: boolean) => ctx.storage.applications.anyAcceptsOrigin(origin, token),
    ownedApplication: applications.owned,
    listApplications: applications.list,
    createApplication: applications.create,
    updateApplication: applications.update,
    deleteApplication: applications.remove,
    regenerateClientSecret: applications.regenerateSecret,

    // Email verification (X-ID-EVF-1..7)
    /**
     * Mails the user a new verification link (the pending new address, else the account's own):
     * what the admin API's "resend verification" and the hosted page's "send it again" call.
     * `undefined` for an unknown user; 409 `email_already_verified`; 429 within the resend limits.
     */
    resendVerification: emailVerification.resendVerification,
    /** A change of address that takes effect when the new address is verified (X-ID-EVF-3). */
    requestEmailChange: emailVerification.requestEmailChange,
    pendingEmailOf: emailVerification.pendingEmailOf,
    /** Uses a mailed link: verifies (or changes to) its address, once (X-ID-EVF-2..4). */
    confirmEmail: emailVerification.confirmEmail,

    // Social providers
    configuredProviders: providers.configuredProviders,
    findProvider: providers.findProvider,
    publicProviders: providers.publicProviders,

    // The organization's users, as its admins manage them (X-ID-UADM-*)
    listOrganizationUsers: organizationUsers.list,
    getOrganizationUser: organizationUsers.get,
    disableOrganizationUser: organizationUsers.disable,
    enableOrganizationUser: organizationUsers.enable,
    deleteOrganizationUser: organizationUsers.remove,
    removeOrganizationUserSecondFactor: organizationUsers.removeSecondFactor,
    forceOrganizationUserPasswordReset: organizationUsers.forcePasswordReset,
    sendOrganizationUserVerificationEmail: organizationUsers.sendVerificationEmail,
    blockedFrom: organizationUsers.blockedFrom,
    // Password reset (X-ID-RST-1..7)
    requestPasswordReset: passwordResets.requestReset,
    findUsableResetLink: passwordResets.findUsableLink,
    resetPassword: passwordResets.resetPassword,
    findCompletedReset: passwordResets.findCompletedReset,
    /** The admin API's forced reset (X-ID-RST-7): `await accounts.forcePasswordReset(userId)`; false when the user is unknown. */
    forcePasswordReset: passwordResets.forcePasswordReset,
  };
}

export type AccountsArea = ReturnType<typeof createAccountsArea>;
