/** Handlers of /api/organizations/current/users: the organization's users, as its admins manage them (X-ID-UADM-*). */
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { toOrganizationUser } from "./shared/mappers.ts";
import { adminAction } from "./shared/request-origin.ts";

export const organizationUsersHandlers: Pick<
  IdentityHandlers,
  | "listOrganizationUsers"
  | "getOrganizationUser"
  | "disableOrganizationUser"
  | "enableOrganizationUser"
  | "deleteOrganizationUser"
  | "removeOrganizationUserSecondFactor"
> = {
  async listOrganizationUsers({ auth, query }, { accounts }) {
    const { organizationId } = adminOf(auth);
    const args = paging(query);
    const { items, totalCount } = await accounts.listOrganizationUsers(organizationId, query.q, args.page, args.pageSize);
    return { status: 200, body: { items: items.map(toOrganizationUser), totalCount, ...args } };
  },

  async getOrganizationUser({ auth, params }, { accounts }) {
    const { organizationId } = adminOf(auth);
    return { status: 200, body: toOrganizationUser(await accounts.getOrganizationUser(organizationId, params.userId)) };
  },

  async disableOrganizationUser({ auth, params }, { accounts }) {
    return { status: 200, body: toOrganizationUser(await accounts.disableOrganizationUser(adminOf(auth), params.userId)) };
  },

  async enableOrganizationUser({ auth, params }, { accounts }) {
    return { status: 200, body: toOrganizationUser(await accounts.enableOrganizationUser(adminOf(auth), params.userId)) };
  },

  async deleteOrganizationUser({ auth, params }, { accounts }) {
    await accounts.deleteOrganizationUser(adminOf(auth), params.userId);
    return { status: 204 };
  },

  async removeOrganizationUserSecondFactor(req, { accounts }) {
    await accounts.removeOrganizationUserSecondFactor(adminOf(req.auth), req.params.userId, adminAction(req).origin);
    return { status: 204 };
  },
};
