/** The signed-in user's own account: name, and deleting it. */
import { client, ok } from "../api.ts";
import { h, show, status } from "../dom.ts";
import { apiForm, field } from "../forms/field.ts";
import { signOut } from "../sign-in.ts";

/** `notice`: shown instead of the way back, for a user who administers no organization. */
export async function accountView(notice?: string): Promise<void> {
  const me = ok(await client.GET("/api/users/me"));
  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    firstName: field(
      "First name",
      h("input", { type: "text", name: "firstName", value: me.firstName, autocomplete: "given-name", maxlength: 100 }),
    ),
    lastName: field(
      "Last name",
      h("input", { type: "text", name: "lastName", value: me.lastName, autocomplete: "family-name", maxlength: 100 }),
    ),
  };
  const submit = async () => {
    ok(
      await client.PATCH("/api/users/me", {
        body: { firstName: fields.firstName.input.value.trim(), lastName: fields.lastName.input.value.trim() },
      }),
    );
    summary.replaceChildren(status("Saved.", "success"));
  };
  const form = apiForm(
    fields,
    summary,
    submit,
    h("p", {}, "Email: ", h("strong", {}, me.email)),
    Object.values(fields).map((f) => f.wrap),
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")),
  );
  const remove = async () => {
    if (!confirm("Delete your account? This cannot be undone.")) return;
    ok(await client.DELETE("/api/users/me"));
    signOut();
  };
  show(
    notice ? status(notice) : h("p", {}, h("a", { href: "#" }, "← Applications")),
    h("section", { "aria-labelledby": "me-title" }, h("h2", { id: "me-title" }, "Your account"), form),
    h(
      "section",
      { "aria-labelledby": "del-title" },
      h("h2", { id: "del-title" }, "Delete your account"),
      h("p", { class: "muted" }, "Your account is removed from every application that uses this sign-in."),
      h("button", { type: "button", class: "danger", onclick: remove }, "Delete my account"),
    ),
  );
}
