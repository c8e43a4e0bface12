/** Handlers of /dashboard: the administrative dashboard's page and script (X-ID-ADM-1). */
import type { IdentityHandlers } from "./identity-handlers.ts";
import { dashboardHeaders, dashboardHtml, dashboardScript } from "./views/dashboard.ts";

export const dashboardHandlers: Pick<IdentityHandlers, "dashboardPage" | "dashboardScript"> = {
  // The same static shell whatever the query: the script reads code/state/iss/error itself, so
  // nothing from the URL is ever reflected into the HTML.
  async dashboardPage() {
    return { status: 200, body: dashboardHtml, contentType: "text/html; charset=utf-8", headers: dashboardHeaders };
  },

  async dashboardScript() {
    return {
      status: 200,
      body: await dashboardScript(),
      contentType: "text/javascript; charset=utf-8",
      headers: { "Cache-Control": "public, max-age=300" },
    };
  },
};
