/**
 * X-ID-AZ-4: failures from other client addresses slow an account down and never lock it (the
 * hosted login and the social link form share the policy with repository's login, X-RB-9).
 * Clients are told apart by their loopback address (harness/client-address.ts), so these checks
 * need the service in-process; time moves on the injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizationPath, Browser, formFields, pkcePair } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let t: IdentityTarget;
let app: TestApp;
beforeAll(async () => {
  // Three failures per account from one address; the slowdown starts there and doubles up to 8 s.
  t = await identityTarget({ env: { LOGIN_MAX_FAILURES: "3", LOGIN_BACKOFF_MAX_SECONDS: "8" } });
  if (!t.clock) return;
  // Delays are whole seconds from the last failure: the clock moves only when a test moves it.
  t.clock.freeze();
  app = await createApp(t);
});
afterAll(async () => t?.close());

const pkce = pkcePair();

/** One password attempt on the hosted login page from `address` (a fresh one by default). */
async function signIn(email: string, password: string, address = freshLoopbackAddress()) {
  const b = new Browser(t.url, fetchFrom(address));
  const f = formFields(
    (await b.get(authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkce.challenge }))).text,
  );
  return b.post("/oauth/authorize", { action: "login", csrf_token: f.csrfToken, request_id: f.requestId, email, password });
}

const retryAfter = (res: { headers: Headers }) => Number(res.headers.get("retry-after"));

describe("failures from other addresses", () => {
  it("X-ID-AZ-4 a victim account is not locked by failures from another address: its owner is slowed (429, a short Retry-After), then signs in with the right password from its own address after the delay", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const victim = await createUser(t);
    const attacker = freshLoopbackAddress();
    for (let i = 0; i < 3; i++) expect((await signIn(victim.email, `guess-${i}`, attacker)).status).toBe(400);
    // The guesser's own address is locked out of the account for the window (X-ID-AZ-3) …
    expect(retryAfter(await signIn(victim.email, victim.password, attacker))).toBeGreaterThan(60);

    // … while the owner, from a new address of their own, only waits a moment.
    const home = freshLoopbackAddress();
    const slowed = await signIn(victim.email, victim.password, home);
    expect(slowed.status).toBe(429);
    expect(retryAfter(slowed)).toBe(1);
    expect(slowed.text).toContain("slowed down");
    expect(slowed.text).toMatch(/Try again in 1 second\b/);
    t.clock.advance(retryAfter(slowed) * 1000);
    const ok = await signIn(victim.email, victim.password, home);
    expect(ok.status).toBe(303);
    expect(ok.location!.startsWith(app.redirectUri)).toBe(true);
  });

  it("X-ID-AZ-4 the delay doubles with each further failure from any address (1, 2, 4 … s) up to LOGIN_BACKOFF_MAX_SECONDS, the same for an unknown email as for an account", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const account = await createUser(t);
    const delays = async (email: string) => {
      const seen: number[] = [];
      // A guesser with a fresh address for every guess: no per-address limit ever applies.
      for (let i = 0; i < 3; i++) expect((await signIn(email, `spread-${i}`)).status).toBe(400);
      for (let i = 0; i < 5; i++) {
        const early = await signIn(email, "too-soon");
        expect(early.status).toBe(429);
        seen.push(retryAfter(early));
        t.clock!.advance(retryAfter(early) * 1000);
        expect((await signIn(email, `spread-late-${i}`)).status).toBe(400);
      }
      return seen;
    };
    expect(await delays(account.email)).toEqual([1, 2, 4, 8, 8]);
    // An email nobody registered is slowed alike: a 429 says nothing about whether the account exists.
    expect(await delays(`nobody-${Date.now()}@example.com`)).toEqual([1, 2, 4, 8, 8]);
    // The failures leave the window; the account is not slowed any more.
    t.clock.advance(15 * 60_000 + 1000);
    expect((await signIn(account.email, account.password)).status).toBe(303);
  });

  it("X-ID-AZ-4 an address the account signed in from is not slowed at all, however many guesses arrive from elsewhere", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const owner = await createUser(t);
    const home = freshLoopbackAddress();
    expect((await signIn(owner.email, owner.password, home)).status).toBe(303);
    // Six failures from fresh addresses, each let through once its delay has passed.
    for (let failures = 0; failures < 6; ) {
      const res = await signIn(owner.email, `spread-${failures}`);
      if (res.status === 429) t.clock.advance(retryAfter(res) * 1000);
      else {
        expect(res.status).toBe(400);
        failures += 1;
      }
    }
    expect((await signIn(owner.email, owner.password)).status).toBe(429); // a new address waits
    expect((await signIn(owner.email, owner.password, home)).status).toBe(303); // home does not
  });
});
