/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3):
 * `client_secret_basic`, `client_secret_post`, or `client_id` alone for public clients. Secrets
 * are checked by the accounts area (HMAC, constant time). The failure text is the same for an
 * unknown client and a wrong secret.
 */
import type { Application } from "../../storage/applications.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import { assertionClientId, CLIENT_ASSERTION_TYPE } from "./client-assertion.ts";
import { invalidRequest, OAuthError } from "./errors.ts";

export interface ClientCredentials {
  clientId: string;
  secret: string | undefined;
  /** HTTP Basic was used: a failure answers with `WWW-Authenticate: Basic`. */
  basic: boolean;
  /** The method the request used (X-ID-CC-5): checked against the application's one method. */
  method: "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "none";
  /** The `private_key_jwt` assertion, with that method (X-ID-CC-7). */
  assertion?: string;
}

/** A failed client authentication; `basic` decides the challenge header. */
export class ClientAuthError extends OAuthError {
  readonly basic: boolean;
  constructor(description: string, basic: boolean) {
    super("invalid_client", description);
    this.basic = basic;
  }
}

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id) ":" urlencode(secret))`. Undefined without Basic. */
function parseBasic(header: string | string[] | undefined): { clientId: string; secret: string } | "malformed" | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== "string") return "malformed";
  const m = /^Basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(header);
  if (!m) return /^Basic\b/i.test(header) ? "malformed" : undefined;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return "malformed";
  try {
    return {
      clientId: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " ")),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " ")),
    };
  } catch {
    return "malformed";
  }
}

/** Which credentials the request presents; `invalid_request` for contradictory ones, `invalid_client` for none. */
export function readClientCredentials(authorization: string | string[] | undefined, form: Record<string, unknown>): ClientCredentials {
  const basic = parseBasic(authorization);
  const bodyId = typeof form.client_id === "string" ? form.client_id : undefined;
  const bodySecret = typeof form.client_secret === "string" ? form.client_secret : undefined;
  if (basic === "malformed") throw new ClientAuthError("The Authorization header is not valid HTTP Basic client authentication.", true);
  if (basic) {
    if (bodySecret !== undefined)
      throw invalidRequest("Use one client authentication method: HTTP Basic or client_secret in the body, not both.");
    if (bodyId !== undefined && bodyId !== basic.clientId)
      throw invalidRequest("client_id in the body differs from the one in the Authorization header.");
    if (form.client_assertion !== undefined || form.client_assertion_type !== undefined)
      throw invalidRequest("Use one client authentication method: HTTP Basic or client_assertion, not both.");
    return { clientId: basic.clientId, secret: basic.secret, basic: true, method: "client_secret_basic" };
  }
  if (form.client_assertion !== undefined || form.client_assertion_type !== undefined) return readAssertion(form, bodyId, bodySecret);
  // Neither HTTP Basic nor client_id: no client authentication at all, which RFC 6749 §5.2 names
  // invalid_client (401), as RFC 7009 §2.2.1 and RFC 7662 §2.3 do for revocation and introspection.
  if (bodyId === undefined)
    throw new ClientAuthError(
      "No client authentication: send HTTP Basic credentials, or client_id (and client_secret) in the body.",
      false,
    );
  return { clientId: bodyId, secret: bodySecret, basic: false, method: bodySecret === undefined ? "none" : "client_secret_post" };
}

/** RFC 7523 §2.2: both parameters, the one assertion type, no secret besides; the client is the assertion's `iss`. */
function readAssertion(form: Record<string, unknown>, bodyId: string | undefined, bodySecret: string | undefined): ClientCredentials {
  const assertion = form.client_assertion;
  if (typeof assertion !== "string" || form.client_assertion_type === undefined)
    throw invalidRequest("client_assertion and client_assertion_type go together.");
  if (form.client_assertion_type !== CLIENT_ASSERTION_TYPE) throw invalidRequest(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE}.`);
  if (bodySecret !== undefined) throw invalidRequest("Use one client authentication method: client_secret or client_assertion, not both.");
  const clientId = assertionClientId(assertion);
  if (clientId === undefined) throw new ClientAuthError("The client assertion is not a JWT naming its client (iss).", false);
  if (bodyId !== undefined && bodyId !== clientId) throw invalidRequest("client_id differs from the client assertion's iss.");
  return { clientId, secret: undefined, basic: false, method: "private_key_jwt", assertion };
}

/** The authenticated application, or ClientAuthError. */
export async function authenticateClient(accounts: AccountsArea, creds: ClientCredentials): Promise<Application> {
  const app = await accounts.authenticateClient(creds.clientId, creds.secret);
  if (!app) throw new ClientAuthError("Client authentication failed.", creds.basic);
  return app;
}
