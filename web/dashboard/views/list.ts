/** The applications of the admin's organization, page by page, and the form that creates one. */
import { client, ok } from "../api.ts";
import { PAGE_SIZE } from "../config.ts";
import { dataTable, h, pager, show } from "../dom.ts";
import { state } from "../state.ts";
import { organizationPolicyForm } from "../forms/second-factor-policy.ts";
import { createForm } from "./create.ts";

export async function listView(page: number): Promise<void> {
  const data = ok(await client.GET("/api/applications", { params: { query: { page, pageSize: PAGE_SIZE } } }));
  const rows = data.items.map((a) =>
    h("tr", {}, h("td", {}, h("a", { href: `#app/${a.id}` }, a.name)), h("td", {}, h("code", {}, a.clientId)), h("td", {}, a.clientType)),
  );
  const pages = Math.max(1, Math.ceil(data.totalCount / PAGE_SIZE));
  show(
    h(
      "section",
      { "aria-labelledby": "apps-title" },
      h("h2", { id: "apps-title" }, `Applications of ${state.organization?.name ?? ""}`),
      data.items.length ? dataTable(["Name", "Client ID", "Type"], rows) : h("p", { class: "muted" }, "No applications yet."),
      pager(page, pages, listView),
    ),
    createForm(),
    state.organization ? organizationPolicyForm(state.organization.secondFactor) : null,
  );
}
