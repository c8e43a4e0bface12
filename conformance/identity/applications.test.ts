/** ID-APP-1, ID-APP-2, ID-AZ-10, X-ID-APP-1, X-ID-APP-2, X-ID-ADM-1: the application administration API the dashboard uses. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/identity.ts";
import type { IdentityApi } from "../harness/api.ts";
import { identityWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import type { IdentityTarget } from "../harness/targets.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import {
  adminToken,
  applicationBody,
  newApplication,
  clientCredentialsAccepted,
  createApplication,
  type Organization,
  userToken,
} from "../harness/identity-fixtures.ts";
import { DASHBOARD_CLIENT_ID } from "../harness/oauth-flow.ts";

const PROVIDERS = [
  {
    id: "github",
    name: "GitHub",
    type: "oauth2",
    authorizationEndpoint: "https://github.com/login/oauth/authorize",
    tokenEndpoint: "https://github.com/login/oauth/access_token",
    userinfoEndpoint: "https://api.github.com/user",
    clientId: "gh-client",
    clientSecret: "gh-very-secret",
    scope: "read:user user:email",
  },
  {
    id: "google",
    name: "Google",
    type: "oidc",
    issuer: "https://accounts.google.com",
    clientId: "g-client",
    clientSecret: "g-very-secret",
  },
];
const SECRET_FORMAT = /^cs_[A-Za-z0-9_-]{43}$/;
/** What a typed call resolves to, for the tables of calls below. */
type Sent = Promise<{ error?: unknown; response: Response }>;

let target: IdentityTarget;
let org: Organization;
let token: string;
/** Typed clients: the admin's current token by default (X-ID-ADM-1 lets one expire and takes a new one). */
let api: (token?: string) => IdentityApi;
beforeAll(async () => {
  const world = await identityWorld({ env: { IDENTITY_SOCIAL_PROVIDERS: JSON.stringify(PROVIDERS) }, admin: true });
  ({ target, organization: org, adminToken: token } = world);
  api = (bearer = token) => world.api(bearer);
});
afterAll(async () => target?.close());

describe("applications: settings", () => {
  it("ID-APP-1 an application has client id, client secret (confidential), redirect URIs, providers, scopes and branding, as created", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.providers);
    const branding = { logoUrl: "https://cdn.example.com/logo.png", primaryColor: "#1A73E8", secondaryColor: "#f1f3f4" };
    const created = await api().POST("/api/applications", {
      body: newApplication({ name: "Acme Notes", enabledProviders: ["github"], branding }),
    });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({
      organizationId: org.organizationId,
      name: "Acme Notes",
      clientType: "confidential",
      redirectUris: ["https://app.example.com/callback", "http://localhost/callback"],
      allowedScopes: ["openid", "profile", "email", "offline_access"],
      enabledProviders: ["github"],
      branding,
    });
    const { clientSecret, ...withoutSecret } = created.data!;
    expect(withoutSecret.clientId).toMatch(/^acme-notes-[A-Za-z0-9]{16}$/);
    expect(clientSecret).toMatch(SECRET_FORMAT);
    expect(Date.parse(withoutSecret.createdAt)).not.toBeNaN();

    const got = await api().GET("/api/applications/{appId}", { params: { path: { appId: withoutSecret.id } } });
    expect(got.response.status).toBe(200);
    expect(got.data).toEqual(withoutSecret);
  });

  it("ID-APP-1 a public client has no secret; defaults are scopes openid profile email, no providers, no branding", async () => {
    const created = await createApplication(target, token, {
      clientType: "public",
      allowedScopes: undefined,
      redirectUris: ["http://127.0.0.1/callback"],
    });
    expect(created).not.toHaveProperty("clientSecret");
    expect(created).toMatchObject({
      clientType: "public",
      allowedScopes: ["openid", "profile", "email"],
      enabledProviders: [],
      branding: {},
    });
  });

  it("ID-APP-1 redirect URIs, enabled providers, allowed scopes and branding are all editable (PATCH), and the change is what GET returns", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.providers);
    const app = await createApplication(target, token);
    const patch = {
      name: "Renamed",
      redirectUris: ["https://new.example.com/cb"],
      enabledProviders: ["google", "github"],
      allowedScopes: ["openid", "email"],
      branding: { logoUrl: "https://cdn.example.com/v2.png", primaryColor: "#0B8043" },
    } satisfies components["schemas"]["ApplicationUpdate"];
    const path = { appId: app.id };
    const updated = await api().PATCH("/api/applications/{appId}", { params: { path }, body: patch });
    expect(updated.response.status).toBe(200);
    expect(updated.data).toMatchObject({ ...patch, clientId: app.clientId, clientType: "confidential" });
    expect(updated.data).not.toHaveProperty("clientSecret");
    const got = await api().GET("/api/applications/{appId}", { params: { path } });
    expect(got.data).toEqual(updated.data);

    // Absent fields are unchanged; branding {} clears it.
    const cleared = await api().PATCH("/api/applications/{appId}", { params: { path }, body: { branding: {} } });
    expect(cleared.data).toMatchObject({ name: "Renamed", redirectUris: patch.redirectUris, branding: {} });
  });

  it("ID-APP-1 bad settings are 400 naming the field: logo URL, colours, scopes, duplicates, client type change", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ branding: { logoUrl: "not a url" } }, "body.branding.logoUrl"],
      [{ branding: { logoUrl: "ftp://cdn.example.com/logo.png" } }, "body.branding.logoUrl"],
      [{ branding: { logoUrl: "http://cdn.example.com/logo.png" } }, "body.branding.logoUrl"],
      [{ branding: { primaryColor: "blue" } }, "body.branding.primaryColor"],
      [{ branding: { secondaryColor: "#12345" } }, "body.branding.secondaryColor"],
      [{ branding: { primaryColor: "#1A73E8", font: "Comic Sans" } }, "body.branding.font"],
      [{ allowedScopes: ["openid", "admin"] }, "body.allowedScopes"],
      [{ allowedScopes: ["openid", "openid"] }, "body.allowedScopes[1]"],
      [{ redirectUris: ["https://a.example.com/cb", "https://a.example.com/cb"] }, "body.redirectUris[1]"],
      [{ redirectUris: [] }, "body.redirectUris"],
      [{ name: "" }, "body.name"],
      [{ clientType: "public" }, "body.clientType"],
    ];
    const app = await createApplication(target, token);
    for (const [body, field] of cases) {
      const res = await request(target.url, "PATCH", `/api/applications/${app.id}`, { token, json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("validation_failed");
      expect(
        res.body.errors.map((e: { field: string }) => e.field).some((f: string) => f.startsWith(field)),
        `${JSON.stringify(body)} → ${JSON.stringify(res.body.errors)}`,
      ).toBe(true);
    }
    const missing = await request(target.url, "POST", "/api/applications", { token, json: { name: "No URIs", clientType: "public" } });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toContainEqual({ field: "body.redirectUris", message: "is required" });
    const badType = await request(target.url, "POST", "/api/applications", { token, json: applicationBody({ clientType: "secret-ish" }) });
    expect(badType.status).toBe(400);
    // Nothing was changed by the refused requests.
    const got = await api().GET("/api/applications/{appId}", { params: { path: { appId: app.id } } });
    expect(got.data).toMatchObject({ name: app.name, redirectUris: app.redirectUris, branding: {} });
  });

  it("ID-APP-1 enabled providers must be configured on this deployment: an unknown one is 400 unknown_provider naming it", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.providers);
    // A provider id of the right form; which ones exist is the deployment's configuration, not the contract's.
    const created = await api().POST("/api/applications", { body: newApplication({ enabledProviders: ["github", "myspace"] }) });
    expect(created.response.status).toBe(400);
    expect(created.error).toMatchObject({
      code: "unknown_provider",
      errors: [{ field: "body.enabledProviders[1]", message: 'unknown provider "myspace"' }],
    });
    const app = await createApplication(target, token);
    const patched = await api().PATCH("/api/applications/{appId}", {
      params: { path: { appId: app.id } },
      body: { enabledProviders: ["myspace"] },
    });
    expect(patched.response.status).toBe(400);
    expect(patched.error!.code).toBe("unknown_provider");
  });

  it("ID-APP-1 GET /api/providers lists the configured providers without their secrets", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.providers);
    // As text: the check below is on the bytes sent.
    const res = await api().GET("/api/providers", { parseAs: "text" });
    expect(res.response.status).toBe(200);
    expect(JSON.parse(res.data!)).toEqual({
      items: [
        { id: "github", name: "GitHub", type: "oauth2" },
        { id: "google", name: "Google", type: "oidc", issuer: "https://accounts.google.com" },
      ],
    });
    expect(res.data).not.toMatch(/secret/i);
  });
});

describe("applications: redirect URIs", () => {
  it("ID-AZ-10 redirect URIs must be HTTPS except localhost: plain http to any other host is refused at registration and on update", async () => {
    for (const uri of ["http://app.example.com/callback", "http://10.0.0.5/cb", "http://localhost.evil.example/cb"]) {
      const res = await request(target.url, "POST", "/api/applications", { token, json: applicationBody({ redirectUris: [uri] }) });
      expect(res.status, uri).toBe(400);
      expect(res.body.errors[0].field, uri).toMatch(/^body\.redirectUris/);
    }
    const app = await createApplication(target, token);
    const res = await request(target.url, "PATCH", `/api/applications/${app.id}`, {
      token,
      json: { redirectUris: ["https://ok.example.com/cb", "http://app.example.com/cb"] },
    });
    expect(res.status).toBe(400);
    const got = await api().GET("/api/applications/{appId}", { params: { path: { appId: app.id } } });
    expect(got.data!.redirectUris).toEqual(app.redirectUris);
  });

  it("X-ID-APP-1 accepted: https anywhere, http on localhost, 127.0.0.1 and [::1] with any port; refused: fragments, relative, other schemes, credentials", async () => {
    const accepted = [
      "https://app.example.com/cb?x=1",
      "https://app.example.com:8443/cb",
      "http://localhost/cb",
      "http://localhost:8080/cb",
      "http://127.0.0.1:53117/callback",
      "http://[::1]:3000/cb",
    ];
    const created = await api().POST("/api/applications", { body: newApplication({ redirectUris: accepted }) });
    expect(created.response.status).toBe(201);
    expect(created.data!.redirectUris).toEqual(accepted);
    const refused = [
      "https://app.example.com/cb#frag",
      "/callback",
      "app.example.com/callback",
      "javascript:alert(1)",
      "ftp://app.example.com/cb",
      "com.example.app:/oauth2redirect",
      "https://user:pass@app.example.com/cb",
      "https://app.example.com/c b",
      `https://app.example.com/${"a".repeat(2048)}`,
    ];
    for (const uri of refused) {
      const res = await request(target.url, "POST", "/api/applications", { token, json: applicationBody({ redirectUris: [uri] }) });
      expect(res.status, uri).toBe(400);
      expect(res.body.code, uri).toBe("validation_failed");
    }
  });
});

describe("applications: client secrets", () => {
  it("X-ID-APP-2 the secret is 256-bit random, returned on create and regenerate only, never listed or read back", async () => {
    const a = await createApplication(target, token);
    const b = await createApplication(target, token);
    expect(a.clientSecret).toMatch(SECRET_FORMAT);
    expect(a.clientSecret).not.toBe(b.clientSecret);
    // As text: the checks are on the bytes sent.
    const list = await api().GET("/api/applications", { params: { query: { pageSize: 100 } }, parseAs: "text" });
    const get = await api().GET("/api/applications/{appId}", { params: { path: { appId: a.id } }, parseAs: "text" });
    for (const text of [list.data, get.data]) {
      expect(text).not.toContain(a.clientSecret);
      expect(text).not.toMatch(/clientSecret|secret_hash/);
    }
    const regenerated = await api().POST("/api/applications/{appId}/regenerate-secret", { params: { path: { appId: a.id } } });
    expect(regenerated.response.status).toBe(200);
    expect(regenerated.data).toEqual({
      clientId: a.clientId,
      clientSecret: expect.stringMatching(SECRET_FORMAT),
      previousSecretExpiresAt: null,
    });
    expect(regenerated.data!.clientSecret).not.toBe(a.clientSecret);
  });

  it("X-ID-APP-2 regenerate-secret: overlap bounds 0-86400, public clients are 409 public_client", async (ctx) => {
    if (!target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const app = await createApplication(target, token);
    for (const overlapSeconds of [-1, 86_401, 1.5, "60"]) {
      // Out of range, not an integer, not a number: outside the contract.
      const res = await request(target.url, "POST", `/api/applications/${app.id}/regenerate-secret`, { token, json: { overlapSeconds } });
      expect(res.status, String(overlapSeconds)).toBe(400);
    }
    const now = target.clock!.now().getTime();
    const overlap = await api().POST("/api/applications/{appId}/regenerate-secret", {
      params: { path: { appId: app.id } },
      body: { overlapSeconds: 86_400 },
    });
    expect(overlap.response.status).toBe(200);
    expect(Date.parse(overlap.data!.previousSecretExpiresAt!) - now).toBeGreaterThanOrEqual(86_400_000);
    expect(Date.parse(overlap.data!.previousSecretExpiresAt!) - now).toBeLessThan(86_400_000 + 60_000);
    const pub = await createApplication(target, token, { clientType: "public" });
    const res = await api().POST("/api/applications/{appId}/regenerate-secret", { params: { path: { appId: pub.id } } });
    expect(res.response.status).toBe(409);
    expect(res.error!.code).toBe("public_client");
  });

  it("ID-APP-2 regenerating the client secret makes the old one stop working at the token endpoint's client authentication (introspection, Basic)", async () => {
    const app = await createApplication(target, token);
    const before = await clientCredentialsAccepted(target, app.clientId, app.clientSecret!);
    expect(before.status, before.text).toBe(200);
    const regenerated = await api().POST("/api/applications/{appId}/regenerate-secret", { params: { path: { appId: app.id } } });
    const old = await clientCredentialsAccepted(target, app.clientId, app.clientSecret!);
    expect(old.status).toBe(401);
    expect(old.body).toMatchObject({ error: "invalid_client" });
    expect((await clientCredentialsAccepted(target, app.clientId, regenerated.data!.clientSecret)).status).toBe(200);
    // The token endpoint itself refuses the old secret as an unknown client (ID-TOK-4), before looking at the grant.
    const tokenRes = await request(target.url, "POST", "/oauth/token", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: "rt_unknown",
        client_id: app.clientId,
        client_secret: app.clientSecret!,
      }).toString(),
    });
    expect(tokenRes.status).toBe(401);
    expect(tokenRes.body.error).toBe("invalid_client");
  });

  it("X-ID-APP-2 with overlapSeconds the old secret keeps working until the overlap ends, then stops", async (ctx) => {
    if (!target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const app = await createApplication(target, token);
    const regenerate = (overlapSeconds?: number) =>
      api().POST("/api/applications/{appId}/regenerate-secret", {
        params: { path: { appId: app.id } },
        ...(overlapSeconds === undefined ? {} : { body: { overlapSeconds } }),
      });
    const regenerated = await regenerate(60);
    expect(regenerated.response.status).toBe(200);
    const secret = regenerated.data!.clientSecret;
    expect((await clientCredentialsAccepted(target, app.clientId, app.clientSecret!)).status).toBe(200);
    expect((await clientCredentialsAccepted(target, app.clientId, secret)).status).toBe(200);
    target.clock!.advance(61_000);
    expect((await clientCredentialsAccepted(target, app.clientId, app.clientSecret!)).status).toBe(401);
    expect((await clientCredentialsAccepted(target, app.clientId, secret)).status).toBe(200);
    // A second regeneration without overlap ends every earlier secret at once.
    const again = await regenerate(3600);
    const third = await regenerate();
    expect((await clientCredentialsAccepted(target, app.clientId, secret)).status).toBe(401);
    expect((await clientCredentialsAccepted(target, app.clientId, again.data!.clientSecret)).status).toBe(401);
    expect((await clientCredentialsAccepted(target, app.clientId, third.data!.clientSecret)).status).toBe(200);
  });
});

describe("applications: access", () => {
  it("ID-WH-8 another organization's application is 403 forbidden and an unknown one 404 not_found, on every operation; nothing changes", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const other = await target.createOrganization!();
    const otherToken = await adminToken(target, other);
    const theirs = await createApplication(target, otherToken);
    const unknown = "11111111-2222-4333-8444-555555555555";
    const ops: Array<[string, (appId: string) => Sent]> = [
      ["GET", (appId) => api().GET("/api/applications/{appId}", { params: { path: { appId } } })],
      ["PATCH", (appId) => api().PATCH("/api/applications/{appId}", { params: { path: { appId } }, body: { name: "Taken over" } })],
      [
        "POST /regenerate-secret",
        (appId) => api().POST("/api/applications/{appId}/regenerate-secret", { params: { path: { appId } }, body: {} }),
      ],
      ["DELETE", (appId) => api().DELETE("/api/applications/{appId}", { params: { path: { appId } } })],
    ];
    for (const [what, send] of ops) {
      const forbidden = await send(theirs.id);
      expect(forbidden.response.status, what).toBe(403);
      expect(forbidden.error).toMatchObject({ code: "forbidden" });
      const missing = await send(unknown);
      expect(missing.response.status, what).toBe(404);
      expect(missing.error).toMatchObject({ code: "not_found" });
    }
    // Not a UUID: outside the contract.
    expect((await request(target.url, "GET", "/api/applications/not-a-uuid", { token })).status).toBe(400);
    const still = await api(otherToken).GET("/api/applications/{appId}", { params: { path: { appId: theirs.id } } });
    expect(still.data).toEqual(Object.fromEntries(Object.entries(theirs).filter(([k]) => k !== "clientSecret")));
    const mine = await api().GET("/api/applications", { params: { query: { pageSize: 100 } } });
    expect(mine.data!.items.map((a) => a.id)).not.toContain(theirs.id);
  });

  it("X-ID-ADM-1 the built-in dashboard client is not listed and cannot be read, changed or deleted through the API", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const dashboard = await target.service!.ctx.storage.applications.findByClientId(DASHBOARD_CLIENT_ID); // set-up: learn its id
    const list = await api().GET("/api/applications", { params: { query: { pageSize: 100 } } });
    expect(list.data!.items.map((a) => a.clientId)).not.toContain(DASHBOARD_CLIENT_ID);
    const params = { path: { appId: dashboard!.id } };
    const ops: Array<[string, () => Sent]> = [
      ["GET", () => api().GET("/api/applications/{appId}", { params })],
      ["PATCH", () => api().PATCH("/api/applications/{appId}", { params, body: { redirectUris: ["https://evil.example.com/cb"] } })],
      ["DELETE", () => api().DELETE("/api/applications/{appId}", { params })],
    ];
    for (const [method, send] of ops) {
      const res = await send();
      expect(res.response.status, method).toBe(403);
    }
  });

  it("X-ID-ADM-1 the administration API needs a dashboard token of an organization admin: none is 401, another client's token 401 invalid_token, a non-admin 403 not_an_admin", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const none = await request(target.url, "GET", "/api/applications");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="identity"');
    const app = await createApplication(target, token);
    const thirdParty = await userToken(target, org.admin.userId, { clientId: app.clientId, scopes: ["openid", "profile"] });
    const wrongClient = await request(target.url, "GET", "/api/applications", { token: thirdParty });
    expect(wrongClient.status).toBe(401);
    expect(wrongClient.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    const user = await target.service!.deps.accounts.registerUser({
      email: `plain-${Date.now()}@example.com`,
      firstName: "Plain",
      lastName: "User",
    });
    // A dashboard token of a user who administers nothing: not the admin token the scheme asks for.
    const notAdmin = await userToken(target, user.id, { clientId: DASHBOARD_CLIENT_ID, scopes: ["openid"] });
    for (const path of ["/api/applications", "/api/organizations/current", "/api/providers"]) {
      const res = await request(target.url, "GET", path, { token: notAdmin });
      expect(res.status, path).toBe(403);
      expect(res.body.code).toBe("not_an_admin");
    }
    const expired = await adminToken(target, org);
    target.clock!.advance(3601_000);
    expect((await request(target.url, "GET", "/api/applications", { token: expired })).status).toBe(401);
    token = await adminToken(target, org);
  });

  it("X-ID-ADM-1 GET /api/organizations/current is the admin's organization", async () => {
    const res = await api().GET("/api/organizations/current");
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ id: org.organizationId, name: expect.any(String), secondFactor: "optional", createdAt: expect.any(String) });
  });

  it("X-API-1 the application list is paged, newest first, with totalCount; DELETE removes an application (204, then 404)", async (ctx) => {
    if (target.external) return skipOnDeployment(ctx, NEEDS.organizations);
    if (!target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const fresh = await target.createOrganization!();
    const freshToken = await adminToken(target, fresh);
    const a = await createApplication(target, freshToken, { name: "First" });
    target.clock!.advance(1000);
    const b = await createApplication(target, freshToken, { name: "Second" });
    const freshApi = api(freshToken);
    const page = (n: number) => freshApi.GET("/api/applications", { params: { query: { page: n, pageSize: 1 } } });
    const page1 = (await page(1)).data!;
    expect(page1).toMatchObject({ totalCount: 2, page: 1, pageSize: 1 });
    expect(page1.items.map((x) => x.id)).toEqual([b.id]);
    const page2 = (await page(2)).data!;
    expect(page2.items.map((x) => x.id)).toEqual([a.id]);
    expect((await page(3)).data!.items).toEqual([]);
    // Out of range: outside the contract.
    for (const q of ["page=0", "pageSize=0", "pageSize=101"])
      expect((await request(target.url, "GET", `/api/applications?${q}`, { token: freshToken })).status, q).toBe(400);

    const params = { path: { appId: a.id } };
    const deleted = await freshApi.DELETE("/api/applications/{appId}", { params });
    expect(deleted.response.status).toBe(204);
    expect((await freshApi.GET("/api/applications/{appId}", { params })).response.status).toBe(404);
    expect((await freshApi.DELETE("/api/applications/{appId}", { params })).response.status).toBe(404);
  });

  it("ID-TOK-4 a deleted application's client id stops working at once: its credentials are invalid_client", async () => {
    const app = await createApplication(target, token);
    expect((await clientCredentialsAccepted(target, app.clientId, app.clientSecret!)).status).toBe(200);
    expect((await api().DELETE("/api/applications/{appId}", { params: { path: { appId: app.id } } })).response.status).toBe(204);
    const after = await clientCredentialsAccepted(target, app.clientId, app.clientSecret!);
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ error: "invalid_client" });
  });
});
