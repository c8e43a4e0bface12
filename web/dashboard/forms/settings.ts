/**
 * An application's settings form: name, redirect URIs, browser origins, scopes, social providers,
 * branding, whether sign-in needs a verified email address (X-ID-EVF-5) or a pushed authorization
 * request (X-ID-PAR-5), its two-step verification policy (X-ID-MFA-9), the devices, DPoP and client
 * authentication settings, the APIs it calls (X-ID-RES-1, X-ID-RES-2) and what signing out does
 * (X-ID-LOGOUT-3, X-ID-LOGOUT-7), saved with one PATCH (`branding` is replaced as a whole: empty
 * fields clear it).
 */
import { client, ok, type Schemas } from "../api.ts";
import { SCOPES } from "../config.ts";
import { checkedValues, h, status } from "../dom.ts";
import { apiForm, clearFieldErrors, field, linesOf, type Field } from "./field.ts";
import { originsFieldset, REDIRECT_URIS_HINT, redirectUrisInput } from "./origins.ts";
import { applicationPolicySelect } from "./second-factor-policy.ts";
import { clientAuthFields } from "./client-auth.ts";
import { apisFields } from "./apis.ts";
import { signOutFields } from "./sign-out.ts";

type Application = Schemas["Application"];
type Provider = Schemas["ProviderList"]["items"][number];

const HEX = /^#[0-9A-Fa-f]{6}$/;

/** A `#RRGGBB` input with a swatch that shows the colour as it is typed. */
function colourField(name: string, label: string, value: string | undefined) {
  const swatch = h("span", { class: "swatch", "aria-hidden": "true" });
  const input = h("input", {
    type: "text",
    name,
    value: value ?? "",
    placeholder: "#1A73E8",
    pattern: "#[0-9A-Fa-f]{6}",
    maxlength: 7,
    autocomplete: "off",
  });
  const paint = () => {
    swatch.style.background = HEX.test(input.value) ? input.value : "transparent";
  };
  input.addEventListener("input", paint);
  paint();
  const f = field(label, input);
  f.wrap.querySelector("label")?.append(swatch);
  return f;
}

/** A fieldset of checkboxes whose errors land in one slot. */
function checkboxGroup(legend: string, errorId: string, boxes: HTMLElement[], empty: string): Field {
  return {
    wrap: h(
      "fieldset",
      {},
      h("legend", {}, legend),
      boxes.length ? boxes : h("p", { class: "muted" }, empty),
      h("p", { id: errorId, class: "field-error", hidden: true }),
    ),
    input: null,
    errorId,
  };
}

const checkbox = (name: string, value: string, label: string, checked: boolean) =>
  h("label", {}, h("input", { type: "checkbox", name, value, checked }), label);

export function settingsForm(a: Application, providers: Provider[]): HTMLFormElement {
  const summary = h("div", { "aria-live": "polite" });
  const known = providers.map((p) => p.id);
  // A provider the application still enables but the deployment no longer configures stays visible, so it can be turned off.
  const providerList = [
    ...providers,
    ...a.enabledProviders.filter((id) => !known.includes(id)).map((id) => ({ id, name: `${id} (no longer configured)` })),
  ];
  const colours = {
    logoUrl: field(
      "Logo URL",
      h("input", { type: "url", name: "logoUrl", value: a.branding.logoUrl ?? "", placeholder: "https://example.com/logo.png" }),
    ),
    primaryColor: colourField("primaryColor", "Primary colour (#RRGGBB)", a.branding.primaryColor),
    secondaryColor: colourField("secondaryColor", "Secondary colour (#RRGGBB)", a.branding.secondaryColor),
  };
  const origins = originsFieldset(a);
  const clientAuth = clientAuthFields(a);
  const apis = apisFields(a);
  const signOut = signOutFields(a);
  const fields = {
    name: field(
      "Name (shown on the login page)",
      h("input", { type: "text", name: "name", value: a.name, required: true, maxlength: 100 }),
    ),
    redirectUris: field("Redirect URIs, one per line", redirectUrisInput(a.redirectUris), REDIRECT_URIS_HINT),
    allowedOrigins: origins,
    allowedScopes: checkboxGroup(
      "Allowed scopes",
      "scopes-error",
      SCOPES.map(([value, label]) => checkbox("allowedScopes", value, label, (a.allowedScopes as string[]).includes(value))),
      "",
    ),
    enabledProviders: checkboxGroup(
      "Social sign-in providers",
      "providers-error",
      providerList.map((p) => checkbox("enabledProviders", p.id, p.name, a.enabledProviders.includes(p.id))),
      "No social providers are configured on this deployment.",
    ),
    ...colours,
    // X-ID-EVF-5: users with an unverified address are stopped at sign-in until they verify it.
    requireVerifiedEmail: checkboxGroup(
      "Email verification",
      "verification-error",
      [checkbox("requireVerifiedEmail", "true", "Require a verified email address to sign in", a.requireVerifiedEmail)],
      "",
    ),
    // X-ID-PAR-5: a plain authorization request is refused; the sign-in must start at POST /oauth/par.
    requirePushedAuthorizationRequests: checkboxGroup(
      "Pushed authorization requests",
      "par-error",
      [
        checkbox(
          "requirePushedAuthorizationRequests",
          "true",
          "Require pushed authorization requests (refuse sign-ins not started with POST /oauth/par)",
          a.requirePushedAuthorizationRequests,
        ),
      ],
      "",
    ),
    secondFactor: field("Two-step verification", applicationPolicySelect(a.secondFactor)),
    // X-ID-DEV-8: devices without a browser (a command line, a television) may sign in with a code.
    deviceAuthorization: checkboxGroup(
      "Devices",
      "device-error",
      [
        checkbox(
          "deviceAuthorization",
          "true",
          "Allow the device authorization grant (sign-in with a code)",
          a.deviceAuthorization ?? false,
        ),
      ],
      "",
    ),
    // X-ID-DPOP-8: every token request must prove a key, so every token is bound to one.
    dpopBoundAccessTokens: checkboxGroup(
      "Sender-constrained tokens",
      "dpop-error",
      [
        checkbox(
          "dpopBoundAccessTokens",
          "true",
          "Require DPoP-bound tokens (refuse token requests without a DPoP proof)",
          a.dpopBoundAccessTokens ?? false,
        ),
      ],
      "",
    ),
    // X-ID-CC-1..6: client credentials and how the application authenticates.
    ...clientAuth.fields,
  };
  // Fields shown inside a group's fieldset: listed for their errors, placed by the group.
  const grouped = { ...apis.fields, ...signOut.fields };
  const submit = async (form: HTMLFormElement) => {
    const branding: Schemas["Branding"] = {};
    for (const key of ["logoUrl", "primaryColor", "secondaryColor"] as const) {
      const value = colours[key].input.value.trim();
      if (value) branding[key] = value;
    }
    ok(
      await client.PATCH("/api/applications/{appId}", {
        params: { path: { appId: a.id } },
        body: {
          name: fields.name.input.value.trim(),
          redirectUris: linesOf(fields.redirectUris.input.value),
          allowedOrigins: origins.value(),
          allowedScopes: checkedValues(form, "allowedScopes") as Schemas["Scope"][],
          enabledProviders: checkedValues(form, "enabledProviders"),
          branding,
          requireVerifiedEmail: checkedValues(form, "requireVerifiedEmail").length > 0,
          secondFactor: fields.secondFactor.input.value as Schemas["ApplicationSecondFactor"],
          deviceAuthorization: checkedValues(form, "deviceAuthorization").length > 0,
          dpopBoundAccessTokens: checkedValues(form, "dpopBoundAccessTokens").length > 0,
          requirePushedAuthorizationRequests: checkedValues(form, "requirePushedAuthorizationRequests").length > 0,
          ...clientAuth.value(),
          ...apis.value(),
          ...signOut.value(),
        },
      }),
    );
    clearFieldErrors({ ...fields, ...grouped });
    summary.replaceChildren(status("Saved. New sign-ins use these settings at once.", "success"));
  };
  return apiForm(
    { ...fields, ...grouped },
    summary,
    submit,
    Object.values(fields).map((f) => f.wrap),
    apis.wrap,
    signOut.wrap,
    summary,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save settings")),
  );
}
