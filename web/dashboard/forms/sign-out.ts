/**
 * The "Sign-out" part of an application's settings form: where RP-Initiated Logout may send the
 * browser afterwards (X-ID-LOGOUT-3, matched exactly) and where Back-Channel Logout posts logout
 * tokens (X-ID-LOGOUT-7). The fields are keyed by the API's names, so the API's field errors
 * (`body.postLogoutRedirectUris[0]`, `body.backchannelLogoutUri`) land next to them.
 */
import type { Schemas } from "../api.ts";
import { h } from "../dom.ts";
import { checkboxField, field, fieldGroup, linesOf } from "./field.ts";

type Application = Schemas["Application"];

export function signOutFields(a: Application) {
  const fields = {
    postLogoutRedirectUris: field(
      "Return URIs after sign-out, one per line",
      h(
        "textarea",
        {
          name: "postLogoutRedirectUris",
          rows: 3,
          spellcheck: "false",
          autocomplete: "off",
          placeholder: "https://app.example.com/signed-out",
        },
        a.postLogoutRedirectUris.join("\n"),
      ),
      "The post-logout redirect URIs: where the browser may go after signing out (post_logout_redirect_uri), matched exactly; https, or http on localhost. Empty: the user stays on this service's “You are signed out” page.",
    ),
    backchannelLogoutUri: field(
      "Back-channel logout URL",
      h("input", {
        type: "url",
        name: "backchannelLogoutUri",
        value: a.backchannelLogoutUri ?? "",
        placeholder: "https://app.example.com/logout",
      }),
      "This service POSTs a logout token here when a session that signed in to the application ends. Empty: none.",
    ),
    backchannelLogoutSessionRequired: checkboxField(
      "The application needs the session ID (sid) in its logout tokens",
      "backchannelLogoutSessionRequired",
      a.backchannelLogoutSessionRequired,
    ),
  };
  const wrap = fieldGroup("Sign-out", "What happens to this application when a user signs out.", Object.values(fields));

  /** The PATCH body's part: the list replaces the stored one; an empty URL removes it. */
  const value = (): Pick<
    Schemas["ApplicationUpdate"],
    "postLogoutRedirectUris" | "backchannelLogoutUri" | "backchannelLogoutSessionRequired"
  > => ({
    postLogoutRedirectUris: linesOf(fields.postLogoutRedirectUris.input.value),
    backchannelLogoutUri: fields.backchannelLogoutUri.input.value.trim() || null,
    backchannelLogoutSessionRequired: fields.backchannelLogoutSessionRequired.input.checked,
  });

  return { fields, wrap, value };
}
