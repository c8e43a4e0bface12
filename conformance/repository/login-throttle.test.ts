/**
 * `POST /auth/login` under the shared sign-in policy (server/security/sign-in-throttle.ts), as
 * identity's hosted login: a per-address limit across accounts and no burst past a limit (X-RB-6),
 * and failures from other addresses slowing an account down instead of locking it (X-RB-9).
 * Clients are told apart by their loopback address, so these need the service in-process.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";
import { repositoryApi } from "../harness/api.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
beforeAll(async () => {
  rb = await repositoryTarget({ env: { LOGIN_MAX_FAILURES: "3", LOGIN_ADDRESS_MAX_FAILURES: "12", LOGIN_BACKOFF_MAX_SECONDS: "8" } });
  // Delays are whole seconds from the last failure: the clock moves only when a test moves it.
  rb.clock?.freeze();
});
afterAll(async () => rb?.close());

const login = (email: string, password: string, address = freshLoopbackAddress()) =>
  repositoryApi(rb, { fetch: fetchFrom(address) }).POST("/auth/login", { body: { email, password } });
const retryAfter = (res: { response: Response }) => Number(res.response.headers.get("retry-after"));

describe("per client address", () => {
  it("X-RB-6 one address trying many accounts is refused after LOGIN_ADDRESS_MAX_FAILURES failures (429 rate_limited, Retry-After), whatever the account; other addresses are not", async (ctx) => {
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, `${NEEDS.ownUsers}; ${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const sprayer = freshLoopbackAddress();
    for (let i = 0; i < 12; i++) expect((await login(`spray-${i}@example.com`, "Winter2026!", sprayer)).response.status).toBe(401);
    const user = await rb.createUser();
    const refused = await login(user.email, user.password, sprayer);
    expect(refused.response.status).toBe(429);
    expect(refused.error).toMatchObject({ status: 429, code: "rate_limited" });
    expect(refused.error!.detail).toMatch(/from your address/);
    expect(retryAfter(refused)).toBeGreaterThan(60);
    expect((await login(user.email, user.password)).response.status).toBe(200);
    rb.clock.advance((retryAfter(refused) + 1) * 1000);
    expect((await login(user.email, user.password, sprayer)).response.status).toBe(200);
  });

  it("X-RB-6 concurrent guesses cannot slip past the limit: of 12 wrong passwords sent at once from one address, exactly 3 are checked", async (ctx) => {
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, `${NEEDS.ownUsers}; ${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const user = await rb.createUser();
    const guesser = freshLoopbackAddress();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login(user.email, `burst-${i}`, guesser)));
    const statuses = answers.map((a) => a.response.status).sort();
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
  });
});

describe("per account, across addresses", () => {
  it("X-RB-9 a victim account is not locked by failures from another address: its owner gets 429 with a short Retry-After, then logs in from its own address after the delay", async (ctx) => {
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, `${NEEDS.ownUsers}; ${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const victim = await rb.createUser();
    const attacker = freshLoopbackAddress();
    for (let i = 0; i < 3; i++) expect((await login(victim.email, `guess-${i}`, attacker)).response.status).toBe(401);
    expect(retryAfter(await login(victim.email, victim.password, attacker))).toBeGreaterThan(60);
    const home = freshLoopbackAddress();
    const slowed = await login(victim.email, victim.password, home);
    expect(slowed.response.status).toBe(429);
    expect(slowed.error!.code).toBe("rate_limited");
    expect(slowed.error!.detail).toMatch(/slowed down/);
    expect(retryAfter(slowed)).toBe(1);
    rb.clock.advance(1000);
    const ok = await login(victim.email, victim.password, home);
    expect(ok.response.status).toBe(200);
    expect(ok.data!.accessToken).toBeTruthy();
  });

  it("X-RB-9 the delay doubles with each failure from any address up to LOGIN_BACKOFF_MAX_SECONDS, alike for an unknown email; an address the account logged in from is not slowed", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, `${NEEDS.ownUsers}; ${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const user = await rb.createUser();
    const home = freshLoopbackAddress();
    expect((await login(user.email, user.password, home)).response.status).toBe(200);
    const delays = async (email: string) => {
      const seen: number[] = [];
      for (let i = 0; i < 3; i++) expect((await login(email, `spread-${i}`)).response.status).toBe(401);
      for (let i = 0; i < 5; i++) {
        const early = await login(email, "too-soon");
        expect(early.response.status).toBe(429);
        seen.push(retryAfter(early));
        // Meanwhile the owner's known address logs in at once.
        if (email === user.email) expect((await login(email, user.password, home)).response.status).toBe(200);
        rb.clock!.advance(retryAfter(early) * 1000);
        expect((await login(email, `spread-late-${i}`)).response.status).toBe(401);
      }
      return seen;
    };
    expect(await delays(user.email)).toEqual([1, 2, 4, 8, 8]);
    expect(await delays(`nobody-${Date.now()}@example.com`)).toEqual([1, 2, 4, 8, 8]);
  });
});
