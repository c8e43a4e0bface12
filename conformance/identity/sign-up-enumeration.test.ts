/**
 * X-ID-USR-2: what sign-up tells about registered emails, and what limits that. Clients are told
 * apart by their loopback address (harness/client-address.ts): in-process only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityApi } from "../harness/api.ts";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../harness/targets.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizationPath, Browser, formFields, pkcePair } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let t: IdentityTarget;
let app: TestApp;
beforeAll(async () => {
  t = await identityTarget();
  if (!t.clock) return;
  app = await createApp(t);
});
afterAll(async () => t?.close());

const pkce = pkcePair();
const person = (email: string) => ({ email, password: "correct horse battery staple", firstName: "Ada", lastName: "Lovelace" });

describe("sign-up and registered emails", () => {
  it("X-ID-USR-2 sign-up discloses a registered email (409 email_taken, the hosted page's message); every attempt draws on one budget of 20 per client address per hour, shared by the page and POST /api/users; other addresses keep theirs", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clientAddresses);
    const prober = freshLoopbackAddress();
    const api = (email: string, address = prober) =>
      identityApi(t, { fetch: fetchFrom(address) }).POST("/api/users", { body: { clientId: app.clientId, ...person(email) } });

    const registered = uniqueEmail("registered");
    expect((await api(registered)).response.status).toBe(201); // 1
    for (let i = 0; i < 9; i++) {
      const probe = await api(registered); // 2 … 10
      expect(probe.response.status).toBe(409);
      expect(probe.error!.code).toBe("email_taken");
    }

    // The hosted sign-up page, from the same address: the same disclosure, the same budget.
    const b = new Browser(t.url, fetchFrom(prober));
    const login = await b.get(authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkce.challenge }));
    const signup = await b.get(/href="(\/signup\?request_id=[^"]+)"/.exec(login.text)![1]!);
    const f = formFields(signup.text);
    const page = (email: string) =>
      b.post("/signup", {
        csrf_token: f.csrfToken,
        request_id: f.requestId,
        email,
        password: "long enough pw",
        first_name: "Ada",
        last_name: "Lovelace",
      });
    for (let i = 0; i < 10; i++) {
      const probe = await page(registered); // 11 … 20
      expect(probe.status).toBe(400);
      expect(probe.text).toContain("already exists");
    }

    const refusedPage = await page(uniqueEmail("new"));
    expect(refusedPage.status).toBe(429);
    expect(Number(refusedPage.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refusedPage.text).not.toContain("already exists");
    const refusedApi = await api(registered);
    expect(refusedApi.response.status).toBe(429);
    expect(refusedApi.error!.code).toBe("rate_limited");

    // Another client address has a budget of its own.
    expect((await api(registered, freshLoopbackAddress())).response.status).toBe(409);
  });
});
