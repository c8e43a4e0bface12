/** The organization's users (X-ID-UADM-1): a search by email or name prefix, page by page. */
import { client, ok } from "../api.ts";
import { PAGE_SIZE } from "../config.ts";
import { dataTable, h, pager, show } from "../dom.ts";
import { state } from "../state.ts";

export async function usersView(page = 1, q = ""): Promise<void> {
  const query = { page, pageSize: PAGE_SIZE, ...(q ? { q } : {}) };
  const data = ok(await client.GET("/api/organizations/current/users", { params: { query } }));
  const pages = Math.max(1, Math.ceil(data.totalCount / PAGE_SIZE));
  const search = h("input", { type: "search", id: "users-q", name: "q", value: q, maxlength: 100, autocomplete: "off" });
  const onSearch = (event: Event) => {
    event.preventDefault();
    void usersView(1, search.value.trim());
  };
  const rows = data.items.map((u) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: `#user/${u.id}` }, u.email)),
      h("td", {}, `${u.firstName} ${u.lastName}`.trim()),
      h("td", {}, u.enabled ? "Enabled" : "Disabled", u.admin ? " · admin" : ""),
      h("td", {}, u.lastSignInAt ? new Date(u.lastSignInAt).toLocaleString() : "Never"),
    ),
  );
  show(
    h("p", {}, h("a", { href: "#" }, "← Applications")),
    h(
      "section",
      { "aria-labelledby": "users-title" },
      h("h2", { id: "users-title" }, `Users of ${state.organization?.name ?? ""}`),
      h(
        "form",
        { role: "search", onsubmit: onSearch },
        h("label", { for: "users-q" }, "Email or name starts with"),
        " ",
        search,
        " ",
        h("button", { type: "submit", class: "secondary" }, "Search"),
      ),
      data.items.length
        ? dataTable(["Email", "Name", "Status", "Last sign-in"], rows)
        : h("p", { class: "muted" }, q ? "No user matches." : "No users yet."),
      pager(page, pages, (p) => usersView(p, q), ` · ${data.totalCount} users`),
    ),
  );
}
