/** Handlers of /api/applications: the admin's organization's applications (ID-APP-1, ID-APP-2). */
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { toApplication } from "./shared/mappers.ts";
import { adminAction } from "./shared/request-origin.ts";

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

  async createApplication(req, { accounts }) {
    const { organizationId } = adminOf(req.auth);
    const { application, clientSecret } = await accounts.createApplication(organizationId, req.body, adminAction(req));
    return { status: 201, body: { ...toApplication(application), ...(clientSecret ? { clientSecret } : {}) } };
  },

  async getApplication({ auth, params }, { accounts }) {
    const { organizationId } = adminOf(auth);
    return { status: 200, body: toApplication(await accounts.ownedApplication(organizationId, params.appId)) };
  },

  async updateApplication(req, { accounts }) {
    const { organizationId } = adminOf(req.auth);
    const app = await accounts.updateApplication(organizationId, req.params.appId, req.body ?? {}, adminAction(req));
    return { status: 200, body: toApplication(app) };
  },

  async deleteApplication(req, { accounts }) {
    const { organizationId } = adminOf(req.auth);
    await accounts.deleteApplication(organizationId, req.params.appId, adminAction(req));
    return { status: 204 };
  },

  async regenerateClientSecret(req, { accounts }) {
    const { organizationId } = adminOf(req.auth);
    const overlapSeconds = req.body?.overlapSeconds ?? 0;
    return { status: 200, body: await accounts.regenerateClientSecret(organizationId, req.params.appId, overlapSeconds, adminAction(req)) };
  },
};
