/**
 * The application's redirect URIs and browser origins (X-ID-CORS-2): the origins are those of the
 * redirect URIs (`allowedOrigins: null`), or a list of their own (empty: no page may use the
 * application).
 */
import { h } from "../dom.ts";
import type { Field } from "./field.ts";
import { linesOf } from "./field.ts";

export const REDIRECT_URIS_HINT = "https, or http on localhost / 127.0.0.1 / [::1]. Matched exactly.";

export const redirectUrisInput = (value: string[] = []) =>
  h("textarea", { name: "redirectUris", rows: 4, spellcheck: "false", autocomplete: "off" }, value.join("\n"));

const originsOf = (uris: string[]) => [
  ...new Set(
    uris
      .map((u) => {
        try {
          return new URL(u).origin;
        } catch {
          return "";
        }
      })
      .filter(Boolean),
  ),
];

/** The fieldset, with `value()`: what the API takes as `allowedOrigins`. */
export function originsFieldset(a: { redirectUris: string[]; allowedOrigins: string[] | null }): Field & { value: () => string[] | null } {
  const list = h(
    "textarea",
    {
      name: "allowedOrigins",
      rows: 3,
      spellcheck: "false",
      autocomplete: "off",
      placeholder: "https://app.example.com",
      "aria-label": "Allowed origins, one per line",
      "aria-describedby": "origins-hint origins-error",
    },
    (a.allowedOrigins ?? []).join("\n"),
  );
  const derived = h("input", { type: "radio", name: "originsMode", value: "derived", checked: a.allowedOrigins === null });
  const listed = h("input", { type: "radio", name: "originsMode", value: "listed", checked: a.allowedOrigins !== null });
  const sync = () => {
    list.disabled = derived.checked;
  };
  derived.addEventListener("change", sync);
  listed.addEventListener("change", sync);
  sync();
  const current = originsOf(a.redirectUris);
  return {
    wrap: h(
      "fieldset",
      {},
      h("legend", {}, "Browser origins (CORS)"),
      h(
        "p",
        { id: "origins-hint", class: "muted" },
        "Pages of these origins may call the token, revocation and userinfo endpoints from the browser (token and revocation: public clients only).",
      ),
      h("label", {}, derived, `The origins of the redirect URIs${current.length ? `: ${current.join(", ")}` : ""}`),
      h("label", {}, listed, "Only these origins, one per line (none: no page)"),
      list,
      h("p", { id: "origins-error", class: "field-error", hidden: true }),
    ),
    input: list,
    errorId: "origins-error",
    value: () => (derived.checked ? null : linesOf(list.value)),
  };
}
