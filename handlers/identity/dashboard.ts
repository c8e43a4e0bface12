/** Handlers of dashboard: dashboardPage, dashboardScript. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const dashboardHandlers: Pick<IdentityHandlers, "dashboardPage" | "dashboardScript"> = {
  dashboardPage: notBuilt,
  dashboardScript: notBuilt,
};
