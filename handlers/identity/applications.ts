/** Handlers of /api/applications: the admin's organization's applications (ID-APP-1, ID-APP-2). */
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { toApplication } from "./shared/mappers.ts";

export const applicationsHandlers: Pick<
  IdentityHandlers,
  "listApplications" | "createApplication" | "getApplication" | "updateApplication" | "deleteApplication" | "regenerateClientSecret"
> = {
  async listApplications({ auth, query }, { accounts }) {
    const { organizationId } = adminOf(auth);
    const args = paging(query);
    const { items, totalCount } = await accounts.listApplications(organizationId, args.page, args.pageSize);
    return { status: 200, body: { items: items.map(toApplication), totalCount, ...args } };
  },

  async createApplication({ auth, body }, { accounts }) {
    const { organizationId } = adminOf(auth);
    const { application, clientSecret } = await accounts.createApplication(organizationId, body);
    return { status: 201, body: { ...toApplication(application), ...(clientSecret ? { clientSecret } : {}) } };
  },

  async getApplication({ auth, params }, { accounts }) {
    const { organizationId } = adminOf(auth);
    return { status: 200, body: toApplication(await accounts.ownedApplication(organizationId, params.appId)) };
  },

  async updateApplication({ auth, params, body }, { accounts }) {
    const { organizationId } = adminOf(auth);
    return { status: 200, body: toApplication(await accounts.updateApplication(organizationId, params.appId, body ?? {})) };
  },

  async deleteApplication({ auth, params }, { accounts }) {
    const { organizationId } = adminOf(auth);
    await accounts.deleteApplication(organizationId, params.appId);
    return { status: 204 };
  },

  async regenerateClientSecret({ auth, params, body }, { accounts }) {
    const { organizationId } = adminOf(auth);
    return { status: 200, body: await accounts.regenerateClientSecret(organizationId, params.appId, body?.overlapSeconds ?? 0) };
  },
};
