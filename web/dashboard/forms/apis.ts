/**
 * The "APIs" part of an application's settings form: the resource URIs it may ask tokens for
 * (X-ID-RES-1 on sign-in, X-ID-CC-3 with client credentials) and the API scopes it may ask for
 * when signing a user in, always together with one of those resources (X-ID-RES-2). The fields are
 * keyed by the API's names, so the API's field errors (`body.apiScopes[1]`) land next to them.
 */
import type { Schemas } from "../api.ts";
import { h } from "../dom.ts";
import { field, fieldGroup, linesOf } from "./field.ts";

type Application = Schemas["Application"];

const listInput = (name: string, value: string[], placeholder: string) =>
  h("textarea", { name, rows: 3, spellcheck: "false", autocomplete: "off", placeholder }, value.join("\n"));

export function apisFields(a: Application) {
  const fields = {
    resources: field(
      "Resource URIs it may ask tokens for, one per line",
      listInput("resources", a.resources, "https://api.example.com"),
      "Absolute URIs without a fragment: a token asked for one carries it as its audience.",
    ),
    apiScopes: field(
      "API scopes, one per line",
      listInput("apiScopes", a.apiScopes, "notes:read"),
      "Scopes of those APIs it may ask for when a user signs in, always with one of the resource URIs above. Not openid, profile, email or offline_access: those are the allowed scopes.",
    ),
  };
  const wrap = fieldGroup(
    "APIs",
    "The APIs (resource servers) this application calls with the tokens it gets here.",
    Object.values(fields),
  );

  /** The PATCH body's part: each list replaces the stored one. */
  const value = (): Pick<Schemas["ApplicationUpdate"], "resources" | "apiScopes"> => ({
    resources: linesOf(fields.resources.input.value),
    apiScopes: linesOf(fields.apiScopes.input.value),
  });

  return { fields, wrap, value };
}
