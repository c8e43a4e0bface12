/**
 * The organization's audit log (X-ID-AUD-1..4): newest first, filtered by type, user, application
 * and time, paged by the cursor each page gives. "Previous" goes back through the cursors already
 * followed: the API pages forward only.
 */
import { client, ok, type Schemas } from "../api.ts";
import { PAGE_SIZE } from "../config.ts";
import { dataTable, h, show } from "../dom.ts";
import { state } from "../state.ts";

type AuditEvent = Schemas["AuditEvent"];
type EventType = AuditEvent["type"];

/** The types an admin filters by, as the API names them (spec/identity/audit.tsp). */
const EVENT_TYPES: EventType[] = [
  "user.signed_in",
  "user.sign_in_failed",
  "user.second_factor_failed",
  "user.recovery_code_used",
  "user.created",
  "user.updated",
  "user.deleted",
  "user.password_changed",
  "user.factor_enrolled",
  "user.factor_removed",
  "user.recovery_codes_regenerated",
  "user.application_access_removed",
  "user.disabled",
  "user.enabled",
  "user.removed",
  "session.ended",
  "token.revoked",
  "application.created",
  "application.updated",
  "application.deleted",
  "application.secret_regenerated",
  "webhook.created",
  "webhook.updated",
  "webhook.deleted",
  "webhook.secret_regenerated",
];

/** The filters of the view; times are the `datetime-local` inputs' values, in the browser's zone. */
export interface AuditFilters {
  type?: EventType | undefined;
  userId?: string | undefined;
  applicationId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A `datetime-local` value as the API's ISO instant; undefined when empty or not a time. */
const instant = (local: string | undefined) => {
  const ms = local ? Date.parse(local) : Number.NaN;
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
};

/**
 * One page of the log. `cursors` are the cursors followed to reach this page (empty on the first),
 * so "Previous" is the page before the last of them.
 */
export async function auditView(filters: AuditFilters = {}, cursors: string[] = []): Promise<void> {
  const cursor = cursors.at(-1);
  const query = {
    pageSize: PAGE_SIZE,
    ...(filters.type ? { type: filters.type } : {}),
    ...(filters.userId && UUID.test(filters.userId) ? { userId: filters.userId } : {}),
    ...(filters.applicationId && UUID.test(filters.applicationId) ? { applicationId: filters.applicationId } : {}),
    ...(instant(filters.since) ? { since: instant(filters.since) } : {}),
    ...(instant(filters.until) ? { until: instant(filters.until) } : {}),
    ...(cursor ? { cursor } : {}),
  };
  const data = ok(await client.GET("/api/audit-events", { params: { query } }));
  const first = cursors.length === 0;

  const type = h(
    "select",
    { id: "audit-type", name: "type" },
    h("option", { value: "" }, "Any type"),
    EVENT_TYPES.map((t) => h("option", { value: t, selected: t === filters.type }, t)),
  );
  const userId = h("input", { id: "audit-user", name: "userId", value: filters.userId ?? "", placeholder: "User id", size: 36 });
  const applicationId = h("input", {
    id: "audit-app",
    name: "applicationId",
    value: filters.applicationId ?? "",
    placeholder: "Application id",
    size: 36,
  });
  const since = h("input", { id: "audit-since", name: "since", type: "datetime-local", value: filters.since ?? "" });
  const until = h("input", { id: "audit-until", name: "until", type: "datetime-local", value: filters.until ?? "" });
  const onFilter = (event: Event) => {
    event.preventDefault();
    void auditView({
      type: (type.value || undefined) as EventType | undefined,
      userId: userId.value.trim() || undefined,
      applicationId: applicationId.value.trim() || undefined,
      since: since.value || undefined,
      until: until.value || undefined,
    });
  };
  const label = (id: string, text: string) => h("label", { for: id }, text);

  show(
    h("p", {}, h("a", { href: "#" }, "← Applications")),
    h(
      "section",
      { "aria-labelledby": "audit-title" },
      h("h2", { id: "audit-title" }, `Audit log of ${state.organization?.name ?? ""}`),
      h(
        "form",
        { role: "search", class: "filters", onsubmit: onFilter },
        label("audit-type", "Type"),
        " ",
        type,
        " ",
        label("audit-user", "User"),
        " ",
        userId,
        " ",
        label("audit-app", "Application"),
        " ",
        applicationId,
        " ",
        label("audit-since", "From"),
        " ",
        since,
        " ",
        label("audit-until", "Before"),
        " ",
        until,
        " ",
        h("button", { type: "submit", class: "secondary" }, "Filter"),
      ),
      data.items.length ? eventTable(data.items) : h("p", { class: "muted" }, "No event matches."),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", class: "secondary", disabled: first, onclick: () => auditView(filters, cursors.slice(0, -1)) },
          "Newer",
        ),
        h("span", {}, `${data.totalCount} events`),
        h(
          "button",
          {
            type: "button",
            class: "secondary",
            disabled: !data.next,
            onclick: () => data.next && auditView(filters, [...cursors, data.next]),
          },
          "Older",
        ),
      ),
    ),
  );
}

function eventTable(items: AuditEvent[]) {
  const actor = (e: AuditEvent) => (e.actor.id ? `${e.actor.type} ${e.actor.id}` : e.actor.type);
  const rows = items.map((e) =>
    h(
      "tr",
      {},
      h("td", {}, new Date(e.occurredAt).toLocaleString()),
      h("td", {}, h("code", {}, e.type)),
      h("td", {}, actor(e)),
      h("td", {}, e.userId ? h("a", { href: `#user/${e.userId}` }, e.userId) : "—"),
      h("td", {}, e.applicationId ? h("a", { href: `#app/${e.applicationId}` }, e.applicationId) : "—"),
      h("td", {}, e.clientAddress ?? "—"),
      h("td", {}, Object.keys(e.details).length ? h("code", {}, JSON.stringify(e.details)) : ""),
    ),
  );
  return dataTable(["When", "Type", "Actor", "User", "Application", "Address", "Details"], rows);
}
