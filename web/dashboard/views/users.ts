/** The organization's users (X-ID-UADM-1): a search by email or name prefix, page by page. */
import { client, ok } from "../api.ts";
import { PAGE_SIZE } from "../config.ts";
import { h, show } from "../dom.ts";
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
        ? h(
            "table",
            {},
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", { scope: "col" }, "Email"),
                h("th", { scope: "col" }, "Name"),
                h("th", { scope: "col" }, "Status"),
                h("th", { scope: "col" }, "Last sign-in"),
              ),
            ),
            h("tbody", {}, rows),
          )
        : h("p", { class: "muted" }, q ? "No user matches." : "No users yet."),
      pages > 1
        ? h(
            "div",
            { class: "actions" },
            h(
              "button",
              { type: "button", class: "secondary", disabled: page <= 1, onclick: () => usersView(page - 1, q) },
              "Previous page",
            ),
            h("span", {}, `Page ${page} of ${pages} · ${data.totalCount} users`),
            h(
              "button",
              { type: "button", class: "secondary", disabled: page >= pages, onclick: () => usersView(page + 1, q) },
              "Next page",
            ),
          )
        : null,
    ),
  );
}
