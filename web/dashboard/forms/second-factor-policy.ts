/**
 * Two-step verification policy (X-ID-MFA-7, X-ID-MFA-9): the select of an application's settings
 * (its own policy, or its organization's) and the organization's own form.
 */
import { client, ok, type Schemas } from "../api.ts";
import { h, status } from "../dom.ts";
import { state } from "../state.ts";
import { apiForm, field } from "./field.ts";

type ApplicationPolicy = Schemas["ApplicationSecondFactor"];
type OrganizationPolicy = Schemas["SecondFactorPolicy"];

const option = (value: string, label: string, selected: string) => h("option", { value, selected: value === selected }, label);

/** An application's policy: `organization` follows the organization's setting. */
export const applicationPolicySelect = (current: ApplicationPolicy) =>
  h(
    "select",
    { name: "secondFactor" },
    option("organization", "As the organization sets it", current),
    option("optional", "Optional: users who set it up use it", current),
    option("required", "Required: every user signs in with a second factor", current),
  );

/** The organization's policy, for its applications that have none of their own; saved with its own PATCH. */
export function organizationPolicyForm(current: OrganizationPolicy): HTMLElement {
  const summary = h("div", { "aria-live": "polite" });
  const fields = {
    secondFactor: field(
      "Two-step verification",
      h(
        "select",
        { name: "secondFactor" },
        option("optional", "Optional: users who set it up use it", current),
        option("required", "Required: every user signs in with a second factor", current),
      ),
      "Applications set to follow the organization use this. It applies from the next sign-in.",
    ),
  };
  const submit = async () => {
    const saved = ok(
      await client.PATCH("/api/organizations/current", { body: { secondFactor: fields.secondFactor.input.value as OrganizationPolicy } }),
    );
    state.organization = saved;
    summary.replaceChildren(status("Saved.", "success"));
  };
  const form = apiForm(
    fields,
    summary,
    submit,
    [fields.secondFactor.wrap],
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")),
  );
  return h("section", { "aria-labelledby": "org-settings-title" }, h("h2", { id: "org-settings-title" }, "Organization settings"), form);
}
