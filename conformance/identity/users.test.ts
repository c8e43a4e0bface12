/** X-ID-USR-1 and the users API: registration, the signed-in user's profile, account deletion. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/identity.ts";
import { bearer, identityApi, type IdentityApi } from "../harness/api.ts";
import { identityWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../harness/targets.ts";
import { adminToken, createApplication, registerUser, userToken } from "../harness/identity-fixtures.ts";
import { DASHBOARD_CLIENT_ID } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment, skipWhenRegistrationRefused } from "../harness/skip.ts";

let target: IdentityTarget;
let clientId: string;
/** A typed client without a token; each call names its own (`bearer`). */
let api: IdentityApi;
beforeAll(async () => {
  const world = await identityWorld({ admin: true });
  target = world.target;
  api = identityApi(target);
  clientId = (await createApplication(target, world.adminToken)).clientId;
});
afterAll(async () => target?.close());

const validRegistration = (): components["schemas"]["UserRegistration"] => ({
  clientId,
  email: uniqueEmail("reg"),
  password: "correct horse battery staple",
  firstName: "Ada",
  lastName: "Lovelace",
});
/** A valid registration for the typed client; `overrides` replace fields. */
const registration = (overrides: Partial<components["schemas"]["UserRegistration"]> = {}) => ({ ...validRegistration(), ...overrides });
/** A registration with fields the contract forbids, for raw requests. */
const badRegistration = (overrides: Record<string, unknown>) => ({ ...validRegistration(), ...overrides });
/** Registers through the typed client (no token: registration is public); a deployment's 429 skips the test. */
const register = async (body: components["schemas"]["UserRegistration"], where: IdentityTarget = target) => {
  const sent = await identityApi(where).POST("/api/users", { body });
  skipWhenRegistrationRefused(where, sent.response.status, sent.error);
  return sent;
};

describe("POST /api/users", () => {
  it("X-ID-USR-1 registering through an application creates the user: 201 with id, email, names, emailVerified false, timestamps; never the password", async () => {
    const body = registration({ email: uniqueEmail("Mixed.Case") });
    const res = await register(body);
    expect(res.response.status).toBe(201);
    expect(res.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: body.email.toLowerCase(),
      firstName: "Ada",
      lastName: "Lovelace",
      emailVerified: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const text = JSON.stringify(res.data);
    expect(text).not.toContain(body.password);
    expect(text).not.toMatch(/password|hash/i);
  });

  it("X-ID-USR-1 accounts are deployment-wide: an email already registered (any case, any application) is 409 email_taken", async () => {
    const email = uniqueEmail("dup");
    expect((await register(registration({ email }))).response.status).toBe(201);
    const again = await register(registration({ email: email.toUpperCase(), clientId: DASHBOARD_CLIENT_ID }));
    expect(again.response.status).toBe(409);
    expect(again.error).toMatchObject({ status: 409, code: "email_taken" });
  });

  it("X-ID-USR-1 concurrent registrations of one email: exactly one is created, the others are 409", async () => {
    const email = uniqueEmail("race");
    const results = await Promise.all([1, 2, 3, 4].map(() => register(registration({ email }))));
    expect(results.map((r) => r.response.status).sort()).toEqual([201, 409, 409, 409]);
  });

  it("X-ID-USR-1 an unknown clientId is 400 unknown_client; bad fields are 400 naming them; unknown fields are refused", async () => {
    const unknown = await register(registration({ clientId: "no-such-client" }));
    expect(unknown.response.status).toBe(400);
    expect(unknown.error).toMatchObject({ code: "unknown_client", errors: [{ field: "body.clientId", message: "unknown client id" }] });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ password: "short" }, "body.password"],
      [{ email: "not-an-email" }, "body.email"],
      [{ firstName: "" }, "body.firstName"],
      [{ lastName: "x".repeat(101) }, "body.lastName"],
      [{ isAdmin: true }, "body.isAdmin"],
      [{ clientId: undefined }, "body.clientId"],
    ];
    for (const [overrides, field] of cases) {
      const res = await request(target.url, "POST", "/api/users", { json: badRegistration(overrides) });
      expect(res.status, field).toBe(400);
      expect(
        res.body.errors.map((e: { field: string }) => e.field),
        field,
      ).toContain(field);
    }
  });

  it("X-API-18 an email whose domain is an IP address, bare or bracketed, is 400 validation_failed naming body.email", async () => {
    for (const email of ["ada@127.0.0.1", "ada@10.1", "ada@127.0.0.0x1", "ada@[127.0.0.1]"]) {
      const res = await register(registration({ email }));
      expect(res.response.status, email).toBe(400);
      expect(res.error, email).toMatchObject({ code: "validation_failed", errors: [{ field: "body.email" }] });
    }
  });
});

describe("/api/users/me", () => {
  it("X-ID-USR-1 GET /api/users/me returns the token's user with scope profile; without profile it is 403 insufficient_scope with an RFC 6750 challenge", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const user = await registerUser(target, clientId);
    const withProfile = await userToken(target, user.id, { clientId, scopes: ["openid", "profile"] });
    const me = await api.GET("/api/users/me", bearer(withProfile));
    expect(me.response.status).toBe(200);
    expect(me.data).toMatchObject({ id: user.id, email: user.email, firstName: "Grace", lastName: "Hopper" });
    const withoutProfile = await userToken(target, user.id, { clientId, scopes: ["openid", "email"] });
    const denied = await api.GET("/api/users/me", bearer(withoutProfile));
    expect(denied.response.status).toBe(403);
    expect(denied.error?.code).toBe("insufficient_scope");
    expect(denied.response.headers.get("www-authenticate")).toBe('Bearer realm="identity", error="insufficient_scope", scope="profile"');
    // No token and a forged one: raw requests, sent on purpose.
    const none = await request(target.url, "GET", "/api/users/me");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer realm="identity"/);
    const forged = await request(target.url, "GET", "/api/users/me", { token: `${withProfile.slice(0, -4)}AAAA` });
    expect(forged.status).toBe(401);
  });

  it("X-ID-USR-1 PATCH /api/users/me changes the name with a dashboard token; a third-party application's token is 403; email changes only once verified", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const user = await registerUser(target, clientId);
    const thirdParty = await userToken(target, user.id, { clientId, scopes: ["openid", "profile"] });
    const refused = await api.PATCH("/api/users/me", { ...bearer(thirdParty), body: { lastName: "King" } });
    expect(refused.response.status).toBe(403);
    expect(refused.error?.code).toBe("insufficient_scope");

    const dashboard = await userToken(target, user.id, { clientId: DASHBOARD_CLIENT_ID, scopes: ["openid", "profile"] });
    target.clock!.advance(5000);
    const updated = await api.PATCH("/api/users/me", { ...bearer(dashboard), body: { lastName: "King" } });
    expect(updated.response.status).toBe(200);
    expect(updated.data).toMatchObject({ id: user.id, firstName: "Grace", lastName: "King", email: user.email });
    expect(Date.parse(updated.data!.updatedAt)).toBeGreaterThan(Date.parse(updated.data!.createdAt));
    const me = await api.GET("/api/users/me", bearer(thirdParty));
    expect(me.data?.lastName).toBe("King");

    // Fields the contract forbids (unknown ones, an empty name): raw.

    for (const body of [{ email: "not an address" }, { password: "new password!" }, { firstName: "" }]) {
      const res = await request(target.url, "PATCH", "/api/users/me", { token: dashboard, json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const unchanged = await api.PATCH("/api/users/me", { ...bearer(dashboard), body: {} });
    expect(unchanged.response.status).toBe(200);
    expect(unchanged.data).toEqual(updated.data);
    // A new address is not the account's until its mailed link is used (X-ID-EVF-3).
    const newEmail = `new-${user.id}@example.com`;
    const asked = await api.PATCH("/api/users/me", { ...bearer(dashboard), body: { email: newEmail } });
    expect(asked.response.status).toBe(200);
    expect(asked.data).toMatchObject({ email: user.email, pendingEmail: newEmail });
  });

  it("X-ID-USR-1 DELETE /api/users/me deletes the account with a dashboard token (204); a third-party token is 403; the account is gone afterwards", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const user = await registerUser(target, clientId);
    const thirdParty = await userToken(target, user.id, { clientId, scopes: ["openid", "profile"] });
    expect((await api.DELETE("/api/users/me", bearer(thirdParty))).response.status).toBe(403);
    expect((await api.GET("/api/users/me", bearer(thirdParty))).response.status).toBe(200);

    const dashboard = await userToken(target, user.id, { clientId: DASHBOARD_CLIENT_ID, scopes: ["openid", "profile"] });
    const deleted = await api.DELETE("/api/users/me", bearer(dashboard));
    expect(deleted.response.status).toBe(204);
    // openapi-fetch leaves a 204's body unread.
    expect(await deleted.response.text()).toBe("");
    // The deleted user's tokens are revoked: raw requests with a bad token, on purpose.
    const after = await request(target.url, "GET", "/api/users/me", { token: thirdParty });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    expect((await request(target.url, "DELETE", "/api/users/me", { token: dashboard })).status).toBe(401);
    // The email is free again.
    expect((await register(registration({ email: user.email }))).response.status).toBe(201);
  });
});

describe("registration rate limit", () => {
  it("X-ID-USR-1 at most 20 registrations per client address per hour: the 21st is 429 rate_limited with Retry-After; an hour later it works again", async (ctx) => {
    if (!target.clock) return skipOnDeployment(ctx, `${NEEDS.registrationBudget}; ${NEEDS.clock}`);
    const limited = await identityTarget();
    try {
      const org = await limited.createOrganization!();
      const id = (await createApplication(limited, await adminToken(limited, org))).clientId;
      // Refused attempts count too, so guessing emails is limited as well: 19 cheap 409s and 1 real registration.
      const taken = uniqueEmail("taken");
      expect((await register(registration({ clientId: id, email: taken }), limited)).response.status).toBe(201);
      for (let i = 0; i < 19; i++) {
        expect((await register(registration({ clientId: id, email: taken }), limited)).response.status).toBe(409);
      }
      const blocked = await register(registration({ clientId: id }), limited);
      expect(blocked.response.status).toBe(429);
      expect(blocked.error?.code).toBe("rate_limited");
      const retryAfter = Number(blocked.response.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      limited.clock!.advance(retryAfter * 1000 + 1000);
      expect((await register(registration({ clientId: id }), limited)).response.status).toBe(201);
    } finally {
      await limited.close();
    }
  });
});
