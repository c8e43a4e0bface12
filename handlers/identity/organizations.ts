/** Handlers of /api/organizations: the admin's own organization. */
import { adminOf, type IdentityDeps, type IdentityHandlers } from "./identity-handlers.ts";
import { HttpProblem } from "../../server/http/problem.ts";

/** The admin's organization as the API shows it; `optional` where no policy was set (X-ID-MFA-9). */
async function currentOrganization(organizationId: string, { accounts }: IdentityDeps) {
  const organization = await accounts.findOrganization(organizationId);
  // The admin link cascades with the organization, so this only happens in a race with its deletion.
  if (!organization) throw new HttpProblem(403, "not_an_admin", "You are not an administrator of any organization.");
  const secondFactor: "optional" | "required" = organization.mfa_policy === "required" ? "required" : "optional";
  return { status: 200 as const, body: { id: organization.id, name: organization.name, secondFactor, createdAt: organization.created_at } };
}

export const organizationsHandlers: Pick<IdentityHandlers, "getCurrentOrganization" | "updateCurrentOrganization"> = {
  async getCurrentOrganization({ auth }, deps) {
    return currentOrganization(adminOf(auth).organizationId, deps);
  },

  async updateCurrentOrganization({ auth, body }, deps) {
    const { organizationId } = adminOf(auth);
    if (body?.secondFactor !== undefined) await deps.factors.setOrganizationPolicy(organizationId, body.secondFactor);
    return currentOrganization(organizationId, deps);
  },
};
