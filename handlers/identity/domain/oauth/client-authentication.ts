/**
 * Who is calling the token, revocation and introspection endpoints (RFC 6749 §2.3, RFC 7523 §2.2):
 * the credentials client-auth.ts read, checked against the application's one registered method
 * (X-ID-CC-5). `private_key_jwt` is checked here against the application's keys (X-ID-CC-6, -7);
 * the client secret methods by the accounts area, as before. Every failure is `invalid_client`.
 */
import type { Application } from "../../storage/applications.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import type { ClientAssertionVerifier } from "./client-assertion.ts";
import { authenticateClient, ClientAuthError, type ClientCredentials } from "./client-auth.ts";
import type { ClientKeySets } from "./client-key-sets.ts";

/** Whether `app` accepts `method`; an application with no method set takes what it always took. */
export function acceptsMethod(app: Application, method: ClientCredentials["method"]): boolean {
  if (app.tokenEndpointAuthMethod !== null) return app.tokenEndpointAuthMethod === method;
  return app.clientType === "public" ? method === "none" : method === "client_secret_basic" || method === "client_secret_post";
}

export type ClientAuthenticator = (creds: ClientCredentials) => Promise<Application>;

export function createClientAuthenticator(deps: {
  accounts: AccountsArea;
  /** The enabled application of a client id, or undefined. */
  findClient: (clientId: string) => Promise<Application | undefined>;
  verifier: ClientAssertionVerifier;
  keySets: ClientKeySets;
}): ClientAuthenticator {
  const wrongMethod = (creds: ClientCredentials) =>
    new ClientAuthError("Client authentication failed: use the application's registered tokenEndpointAuthMethod.", creds.basic);

  return async (creds) => {
    if (creds.method !== "private_key_jwt") {
      const app = await authenticateClient(deps.accounts, creds);
      if (!acceptsMethod(app, creds.method)) throw wrongMethod(creds);
      return app;
    }
    const app = await deps.findClient(creds.clientId);
    if (!app) throw new ClientAuthError("Client authentication failed.", false);
    if (!acceptsMethod(app, creds.method)) throw wrongMethod(creds);
    const keys = deps.keySets.keysOf(app);
    if (!keys) throw new ClientAuthError("Client authentication failed: the application has no keys registered.", false);
    await deps.verifier.verify(app, creds.assertion!, keys);
    return app;
  };
}
