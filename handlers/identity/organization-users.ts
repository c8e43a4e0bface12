/** Handlers of /api/organizations/current/users: the organization's users, as its admins manage them (X-ID-UADM-*). */
import { paging } from "../../server/http/handler-inputs.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { adminOf, type IdentityHandlers, type IdentityPrincipal } from "./identity-handlers.ts";
import { requestOrigin } from "./shared/request-origin.ts";
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
  | "forceOrganizationUserPasswordReset"
  | "sendOrganizationUserVerificationEmail"
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

  async disableOrganizationUser(req, { accounts }) {
    return { status: 200, body: toOrganizationUser(await accounts.disableOrganizationUser(actorOf(req), req.params.userId)) };
  },

  async enableOrganizationUser(req, { accounts }) {
    return { status: 200, body: toOrganizationUser(await accounts.enableOrganizationUser(actorOf(req), req.params.userId)) };
  },

  async deleteOrganizationUser(req, { accounts }) {
    await accounts.deleteOrganizationUser(actorOf(req), req.params.userId);
    return { status: 204 };
  },

  async removeOrganizationUserSecondFactor(req, { accounts }) {
    await accounts.removeOrganizationUserSecondFactor(adminOf(req.auth), req.params.userId, adminAction(req).origin);
    return { status: 204 };
  },

  async forceOrganizationUserPasswordReset(req, { accounts }) {
    await accounts.forceOrganizationUserPasswordReset(actorOf(req), req.params.userId);
    return { status: 204 };
  },

  async sendOrganizationUserVerificationEmail(req, { accounts }) {
    await accounts.sendOrganizationUserVerificationEmail(actorOf(req), req.params.userId);
    return { status: 204 };
  },
};

/** The admin and their organization, and where the call came from (the audit log's actor, X-ID-AUD-6). */
const actorOf = (req: { auth: IdentityPrincipal; ip: string; headers: RequestHeaders }) => ({
  ...adminOf(req.auth),
  origin: requestOrigin(req),
});
