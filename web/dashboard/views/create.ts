/** The form that registers an application; a confidential one's secret is shown once on its page. */
import { client, ok, type Schemas } from "../api.ts";
import { h } from "../dom.ts";
import { apiForm, field, linesOf } from "../forms/field.ts";
import { REDIRECT_URIS_HINT, redirectUrisInput } from "../forms/origins.ts";
import { state } from "../state.ts";

export function createForm(): HTMLElement {
  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    name: field("Name (shown on the login page)", h("input", { type: "text", name: "name", required: true, maxlength: 100 })),
    clientType: field(
      "Client type",
      h(
        "select",
        { name: "clientType" },
        h("option", { value: "confidential" }, "Confidential (server-side: has a client secret)"),
        h("option", { value: "public" }, "Public (single-page or native app: PKCE, no secret)"),
      ),
    ),
    redirectUris: field("Redirect URIs, one per line", redirectUrisInput(), REDIRECT_URIS_HINT),
  };
  const submit = async () => {
    const created = ok(
      await client.POST("/api/applications", {
        body: {
          name: fields.name.input.value.trim(),
          clientType: fields.clientType.input.value as Schemas["ClientType"],
          redirectUris: linesOf(fields.redirectUris.input.value),
        },
      }),
    );
    if (created.clientSecret) state.pendingSecret = { appId: created.id, secret: created.clientSecret, note: "" };
    location.hash = `#app/${created.id}`;
  };
  const form = apiForm(
    fields,
    summary,
    submit,
    Object.values(fields).map((f) => f.wrap),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create application")),
  );
  return h("section", { "aria-labelledby": "new-title" }, h("h2", { id: "new-title" }, "New application"), form);
}
