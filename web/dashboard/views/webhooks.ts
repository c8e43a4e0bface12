/** An application's webhooks: the list (pause, resume, new signing secret, delete) and the form that adds one. */
import { client, ok } from "../api.ts";
import { app, checkedValues, dataTable, h, show } from "../dom.ts";
import { apiForm, field } from "../forms/field.ts";

/** The events of a user's profile, which a new webhook subscribes to unless the admin unticks them. */
const USER_EVENTS = new Set(["user.created", "user.updated", "user.deleted"]);

const secretShown = (title: string, secret: string) =>
  h("div", { role: "alert" }, h("p", {}, h("strong", {}, title)), h("code", { class: "secret" }, secret));

export async function webhooksView(appId: string): Promise<void> {
  const appPath = { params: { path: { appId } } };
  const [a, list, catalog] = await Promise.all([
    client.GET("/api/applications/{appId}", appPath).then(ok),
    client.GET("/api/applications/{appId}/webhooks", { params: { path: { appId }, query: { pageSize: 100 } } }).then(ok),
    client.GET("/api/applications/{appId}/webhooks/events", appPath).then(ok),
  ]);
  const secretArea = h("div", { "aria-live": "polite", "data-secret": true });
  const one = (webhookId: string) => ({ params: { path: { appId, webhookId } } });
  const rows = list.items.map((w) => {
    const toggle = async () => {
      ok(await client.PUT("/api/applications/{appId}/webhooks/{webhookId}", { ...one(w.id), body: { isActive: !w.isActive } }));
      await webhooksView(appId);
    };
    const newSecret = async () => {
      if (!confirm("Regenerate this webhook's signing secret?")) return;
      const r = ok(await client.POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", one(w.id)));
      secretArea.replaceChildren(secretShown("New signing secret. Copy it now: it is not shown again.", r.secret));
    };
    const remove = async () => {
      if (!confirm(`Delete the webhook to ${w.url}?`)) return;
      ok(await client.DELETE("/api/applications/{appId}/webhooks/{webhookId}", one(w.id)));
      await webhooksView(appId);
    };
    return h(
      "tr",
      {},
      h("td", {}, h("code", {}, w.url)),
      h("td", {}, w.events.join(", ")),
      h("td", {}, w.isActive ? "active" : "paused"),
      h(
        "td",
        {},
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "secondary", onclick: toggle }, w.isActive ? "Pause" : "Resume"),
          h("button", { type: "button", class: "secondary", onclick: newSecret }, "New secret"),
          h("button", { type: "button", class: "danger", onclick: remove }, "Delete"),
        ),
      ),
    );
  });

  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    url: field(
      "Receiver URL",
      h("input", { type: "url", name: "url", required: true, placeholder: "https://example.com/webhooks/identity" }),
    ),
  };
  // The user events are ticked by default; the audit log's security events (X-ID-AUD-7) are a choice to make.
  const eventBoxes = catalog.items.map((e) =>
    h("label", {}, h("input", { type: "checkbox", name: "events", value: e.event, checked: USER_EVENTS.has(e.event) }), e.event),
  );
  const submit = async (form: HTMLFormElement) => {
    const created = ok(
      await client.POST("/api/applications/{appId}/webhooks", {
        ...appPath,
        body: { url: fields.url.input.value.trim(), events: checkedValues(form, "events") as (typeof catalog.items)[number]["event"][] },
      }),
    );
    await webhooksView(appId); // the list with the new webhook, then its secret in the new view's slot
    app.querySelector("[data-secret]")?.replaceChildren(secretShown("Webhook created. Its signing secret, shown once:", created.secret));
  };
  const form = apiForm(
    fields,
    summary,
    submit,
    fields.url.wrap,
    h("fieldset", {}, h("legend", {}, "Events"), eventBoxes),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add webhook")),
  );
  show(
    h("p", {}, h("a", { href: `#app/${appId}` }, `← ${a.name}`)),
    h(
      "section",
      { "aria-labelledby": "wh-title" },
      h("h2", { id: "wh-title" }, `Webhooks of ${a.name}`),
      h(
        "p",
        { class: "muted" },
        "Each delivery is a signed POST (X-Webhook-Signature: sha256=HMAC of the body with the webhook's secret).",
      ),
      secretArea,
      list.items.length
        ? dataTable(["URL", "Events", "State", h("span", { class: "visually-hidden" }, "Actions")], rows)
        : h("p", { class: "muted" }, "No webhooks yet."),
    ),
    h("section", { "aria-labelledby": "wh-new" }, h("h2", { id: "wh-new" }, "New webhook"), form),
  );
}
