/** Handlers of applications: listApplications, createApplication, getApplication, updateApplication, deleteApplication, regenerateClientSecret. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const applicationsHandlers: Pick<IdentityHandlers, "listApplications" | "createApplication" | "getApplication" | "updateApplication" | "deleteApplication" | "regenerateClientSecret"> = {
  listApplications: notBuilt,
  createApplication: notBuilt,
  getApplication: notBuilt,
  updateApplication: notBuilt,
  deleteApplication: notBuilt,
  regenerateClientSecret: notBuilt,
};
