/**
 * Resource indicators (RFC 8707) on the device authorization grant (X-ID-DEV-11), run with
 * oauth4webapi as the device: the resource named on the device authorization request is the `aud`
 * of every access token of the grant, and lets the request ask for the application's API scopes.
 */
import { describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { authorizeWithPassword, type Browser, tokenRequest } from "../harness/oauth-flow.ts";
import { decodeJwt } from "../harness/http.ts";
import { discover, insecure } from "../harness/oauth4webapi-flow.ts";

const API = "https://repository.example";

const world = fileWorld(() =>
  identityWorld({
    apps: {
      cli: {
        clientType: "public",
        deviceAuthorization: true,
        allowedScopes: ["openid", "offline_access"],
        resources: [API],
        apiScopes: ["repository"],
      },
      plain: { clientType: "public" },
    },
    user: true,
  }),
);

const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;

async function signedIn(): Promise<Browser> {
  const f = await authorizeWithPassword(world.target.url, {
    clientId: world.plain.clientId,
    redirectUri: world.plain.redirectUri,
    email: world.user.email,
    password: world.user.password,
  });
  return f.browser;
}

const start = (extra: Record<string, string>) =>
  tokenRequest(world.target.url, { client_id: world.cli.clientId, ...extra }, undefined, "/oauth/device_authorization");

describe("X-ID-DEV-11 resource indicators on the device grant", () => {
  it("X-ID-DEV-11 the resource is every access token's aud, the consent names the API, refreshes keep it", async () => {
    const as = await discover(world.target.url);
    const client: oauth.Client = { client_id: world.cli.clientId };
    const codes = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(
        as,
        client,
        oauth.None(),
        { scope: "openid offline_access repository", resource: API },
        insecure,
      ),
    );
    const browser = await signedIn();
    const form = await browser.get(`/device?user_code=${codes.user_code}`);
    const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: codes.user_code, action: "lookup" });
    expect(consent.status).toBe(200);
    expect(consent.text).toContain("repository.example on your behalf (repository)");
    const done = await browser.post("/device", { csrf_token: csrfOf(consent.text), user_code: codes.user_code, action: "approve" });
    expect(done.status).toBe(200);

    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, oauth.None(), codes.device_code, insecure),
    );
    const access = decodeJwt(tokens.access_token).payload;
    expect(access.aud).toBe(API);
    expect(access.scope).toBe("openid offline_access repository");
    // The ID token stays the client's (X-ID-RES-3).
    expect(decodeJwt(tokens.id_token!).payload.aud).toBe(world.cli.clientId);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, {
        ...insecure,
        additionalParameters: { resource: API },
      }),
    );
    expect(decodeJwt(refreshed.access_token).payload.aud).toBe(API);
    // Another resource on a refresh is invalid_target (X-ID-RES-4).
    const other = await tokenRequest(world.target.url, {
      grant_type: "refresh_token",
      refresh_token: refreshed.refresh_token!,
      client_id: world.cli.clientId,
      resource: "https://other.example/api",
    });
    expect(other.status).toBe(400);
    expect(other.json.error).toBe("invalid_target");
  });

  it("X-ID-DEV-11 an unregistered resource is invalid_target; an API scope without a resource is invalid_scope", async () => {
    const unregistered = await start({ scope: "openid repository", resource: "https://other.example/api" });
    expect(unregistered.status).toBe(400);
    expect(unregistered.json.error).toBe("invalid_target");
    const fragment = await start({ resource: `${API}#x` });
    expect(fragment.status).toBe(400);
    expect(fragment.json.error).toBe("invalid_target");
    const noResource = await start({ scope: "openid repository" });
    expect(noResource.status).toBe(400);
    expect(noResource.json.error).toBe("invalid_scope");
    // Without a resource the grant is as before: the client is the access token's audience.
    const plain = await start({ scope: "openid" });
    expect(plain.status).toBe(200);
  });
});
