/**
 * The authorization code flow as oauth4webapi, an independent client library, runs it: discovery,
 * the hosted sign-in (authorizeWithPassword), the callback's checks (state, RFC 9207 `iss`), the code
 * exchange with PKCE and `client_secret_post`, and the token response's checks (ID token included).
 * Tests use it where the point is that a strict client other than ours accepts what the service does.
 */
import * as oauth from "oauth4webapi";
import { authorizeWithPassword } from "./oauth-flow.ts";

/** The services under test are plain http on 127.0.0.1; oauth4webapi refuses that unless told. */
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** The issuer's metadata, as oauth4webapi reads and checks it. */
export async function discover(issuerUrl: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(issuerUrl);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
}

/**
 * Signs `user` in to a confidential application through the hosted pages, then completes the flow
 * with oauth4webapi; `resource` (RFC 8707) is sent on the authorization request and the exchange.
 */
export async function codeFlow(
  issuerUrl: string,
  app: { clientId: string; clientSecret?: string; redirectUri: string },
  user: { email: string; password: string },
  o: { scope: string; resource?: string },
) {
  const as = await discover(issuerUrl);
  const client: oauth.Client = { client_id: app.clientId };
  const resource = o.resource ? { resource: o.resource } : undefined;
  const flow = await authorizeWithPassword(issuerUrl, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope: o.scope,
    ...(resource ? { extra: resource } : {}),
  });
  const callback = oauth.validateAuthResponse(as, client, new URL(flow.location), flow.state ?? oauth.expectNoState);
  const answer = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.ClientSecretPost(app.clientSecret!),
    callback,
    app.redirectUri,
    flow.verifier,
    { ...insecure, ...(resource ? { additionalParameters: resource } : {}) },
  );
  return { as, tokens: await oauth.processAuthorizationCodeResponse(as, client, answer) };
}
