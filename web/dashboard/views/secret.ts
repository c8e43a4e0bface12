/** A confidential application's client secret: shown once when made, regenerated on request (X-ID-APP-2). */
import { ApiError, client, ok, type Schemas } from "../api.ts";
import { h, status } from "../dom.ts";

export function secretNotice(secret: string, note: string): HTMLElement {
  return h(
    "div",
    { role: "alert" },
    h("p", {}, h("strong", {}, "New client secret. Copy it now: it is not shown again."), note ? ` ${note}` : ""),
    h("code", { class: "secret", tabindex: "0" }, secret),
    h("button", { type: "button", class: "secondary", onclick: () => navigator.clipboard?.writeText(secret) }, "Copy secret"),
  );
}

/** The section with the regenerate button; `secretArea` may already hold the secret of a just-created application. */
export function secretSection(a: Schemas["Application"], secretArea: HTMLElement): HTMLElement {
  const overlap = h(
    "select",
    { id: "overlap" },
    h("option", { value: "0" }, "Old secret stops working at once"),
    h("option", { value: "3600" }, "Old secret keeps working for 1 hour"),
    h("option", { value: "86400" }, "Old secret keeps working for 24 hours"),
  );
  const regenerate = async () => {
    if (!confirm(`Regenerate the client secret of ${a.name}?`)) return;
    try {
      const r = ok(
        await client.POST("/api/applications/{appId}/regenerate-secret", {
          params: { path: { appId: a.id } },
          body: { overlapSeconds: Number(overlap.value) },
        }),
      );
      const note = r.previousSecretExpiresAt
        ? `The previous secret works until ${new Date(r.previousSecretExpiresAt).toLocaleString()}.`
        : "The previous secret no longer works.";
      secretArea.replaceChildren(secretNotice(r.clientSecret, note));
    } catch (err) {
      if (err instanceof ApiError) secretArea.replaceChildren(status(err.message, "error"));
    }
  };
  return h(
    "section",
    { "aria-labelledby": "secret-title" },
    h("h2", { id: "secret-title" }, "Client secret"),
    h(
      "p",
      { class: "muted" },
      "The secret is stored hashed and was shown once, when it was made. Regenerate it if it leaked or to rotate it.",
    ),
    h("label", { for: "overlap" }, "When regenerating"),
    overlap,
    h("div", { class: "actions" }, h("button", { type: "button", onclick: regenerate }, "Regenerate client secret")),
    secretArea,
  );
}
