/**
 * The client credentials and client authentication part of an application's settings form
 * (X-ID-CC-1..6): whether it may use the client credentials grant and with which scopes, its one
 * authentication method, and its public keys for private_key_jwt (a JWK Set, or the URL that
 * publishes one). The resource URIs it may ask tokens for are in the "APIs" group (apis.ts). The
 * fields are keyed by the API's names, so the API's field errors land next to them.
 */
import type { Schemas } from "../api.ts";
import { h } from "../dom.ts";
import { field, linesOf } from "./field.ts";

type Application = Schemas["Application"];
type Method = NonNullable<Application["tokenEndpointAuthMethod"]>;

const METHODS: [Method | "", string][] = [
  ["", "Client secret, as HTTP Basic or in the form (default)"],
  ["client_secret_basic", "Client secret as HTTP Basic only (client_secret_basic)"],
  ["client_secret_post", "Client secret in the form only (client_secret_post)"],
  ["private_key_jwt", "A JWT signed with the application's key (private_key_jwt)"],
  ["none", "None: a public client (none)"],
];

export function clientAuthFields(a: Application) {
  const method = h(
    "select",
    { name: "tokenEndpointAuthMethod" },
    METHODS.map(([value, label]) => h("option", { value, selected: (a.tokenEndpointAuthMethod ?? "") === value }, label)),
  );
  const fields = {
    clientCredentials: field(
      "Allow the client credentials grant",
      h("input", { type: "checkbox", name: "clientCredentials", value: "true", checked: a.clientCredentials.enabled }),
    ),
    clientCredentialsScopes: field(
      "Client credentials scopes, one per line",
      h("textarea", { name: "clientCredentialsScopes", rows: 3 }, a.clientCredentials.scopes.join("\n")),
    ),
    tokenEndpointAuthMethod: field("Client authentication", method),
    jwks: field(
      "Public keys (JWK Set JSON) for private_key_jwt",
      h("textarea", { name: "jwks", rows: 4 }, a.jwks ? JSON.stringify(a.jwks, null, 2) : ""),
      "Public keys only; leave empty when the keys are published at a URL.",
    ),
    jwksUri: field("JWK Set URL for private_key_jwt", h("input", { type: "url", name: "jwksUri", value: a.jwksUri ?? "" })),
  };

  /** The PATCH body's part; a JWK Set that is not JSON is sent as it is, for the API to name it. */
  function value(): Pick<Schemas["ApplicationUpdate"], "clientCredentials" | "tokenEndpointAuthMethod" | "jwks" | "jwksUri"> {
    const jwksText = fields.jwks.input.value.trim();
    let jwks: Application["jwks"] = null;
    try {
      jwks = jwksText ? (JSON.parse(jwksText) as Application["jwks"]) : null;
    } catch {
      jwks = jwksText as unknown as Application["jwks"];
    }
    const chosen = fields.tokenEndpointAuthMethod.input.value as Method | "";
    return {
      clientCredentials: {
        enabled: (fields.clientCredentials.input as HTMLInputElement).checked,
        scopes: linesOf(fields.clientCredentialsScopes.input.value),
      },
      ...(chosen ? { tokenEndpointAuthMethod: chosen } : {}),
      jwks,
      jwksUri: fields.jwksUri.input.value.trim() || null,
    };
  }

  return { fields, value };
}
