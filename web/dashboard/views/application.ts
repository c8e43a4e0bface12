/** One application: its client id, settings, client secret, and deletion. */
import { client, ok } from "../api.ts";
import { h, show } from "../dom.ts";
import { settingsForm } from "../forms/settings.ts";
import { state } from "../state.ts";
import { secretNotice, secretSection } from "./secret.ts";

export async function applicationView(id: string): Promise<void> {
  const a = ok(await client.GET("/api/applications/{appId}", { params: { path: { appId: id } } }));
  const secretArea = h("div", { "aria-live": "polite" });
  if (state.pendingSecret?.appId === a.id) secretArea.append(secretNotice(state.pendingSecret.secret, state.pendingSecret.note));
  state.pendingSecret = undefined;

  const remove = async () => {
    if (!confirm(`Delete ${a.name}? This cannot be undone.`)) return;
    ok(await client.DELETE("/api/applications/{appId}", { params: { path: { appId: a.id } } }));
    location.hash = "#";
  };

  show(
    h("p", {}, h("a", { href: "#" }, "← All applications")),
    h(
      "section",
      { "aria-labelledby": "app-title" },
      h("h2", { id: "app-title" }, a.name),
      h(
        "p",
        {},
        "Client ID: ",
        h("code", {}, a.clientId),
        " ",
        h("button", { type: "button", class: "secondary", onclick: () => navigator.clipboard?.writeText(a.clientId) }, "Copy"),
      ),
      h(
        "p",
        { class: "muted" },
        `${a.clientType === "public" ? "Public client (PKCE, no secret)" : "Confidential client"} · created ${new Date(a.createdAt).toLocaleString()}`,
      ),
      h("p", {}, h("a", { href: `#app/${a.id}/webhooks` }, "Manage webhooks")),
    ),
    h("section", { "aria-labelledby": "settings-title" }, h("h2", { id: "settings-title" }, "Settings"), settingsForm(a, state.providers)),
    a.clientType === "confidential" ? secretSection(a, secretArea) : null,
    h(
      "section",
      { "aria-labelledby": "danger-title" },
      h("h2", { id: "danger-title" }, "Delete"),
      h("p", { class: "muted" }, "Deleting the application ends its client id at once, with its tokens and webhooks."),
      h("button", { type: "button", class: "danger", onclick: remove }, "Delete application"),
    ),
  );
}
