/** Handlers of /api/organizations: the admin's own organization. */
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { HttpProblem } from "../../server/http/problem.ts";

export const organizationsHandlers: Pick<IdentityHandlers, "getCurrentOrganization"> = {
  async getCurrentOrganization({ auth }, { accounts }) {
    const admin = adminOf(auth);
    const organization = await accounts.findOrganization(admin.organizationId);
    // The admin link cascades with the organization, so this only happens in a race with its deletion.
    if (!organization) throw new HttpProblem(403, "not_an_admin", "You are not an administrator of any organization.");
    return { status: 200, body: { id: organization.id, name: organization.name, createdAt: organization.created_at } };
  },
};
