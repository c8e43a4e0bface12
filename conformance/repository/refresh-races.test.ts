/**
 * X-RB-12: a reused refresh token revokes every refresh token of its login, also when the reuse
 * races the rotation it detects, and a logout racing a refresh ends the login all the same.
 *
 * Each round logs in (a new login, a new family), then sends the requests of the race at once
 * (`Promise.all`: each goes out on a connection of its own, and alternately to a second instance
 * on the same database when the suite runs the service itself), waits for every answer, and only
 * then tries each refresh token the login ever handed out, the race's winner's included. The
 * race is repeated for several rounds and every round must hold: the window is a few awaits wide,
 * and before X-RB-12 held nearly every round escaped it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryApi, type RepositoryApi } from "../harness/api.ts";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";

const ROUNDS = 10;

let rb: RepositoryTarget;
let other: { url: string; close(): Promise<void> } | undefined;
/** One typed client per instance; requests of a burst alternate between them. */
let instances: RepositoryApi[];
beforeAll(async () => {
  rb = await repositoryTarget();
  if (rb.anotherInstance) other = await rb.anotherInstance();
  instances = [repositoryApi(rb), ...(other ? [repositoryApi(other)] : [])];
});
afterAll(async () => {
  await other?.close();
  await rb?.close();
});

const api = () => instances[0]!;
const login = async () => {
  const res = await api().POST("/auth/login", { body: { email: rb.user.email, password: rb.user.password } });
  expect(res.response.status).toBe(200);
  return res.data!;
};
const refreshOn = (client: RepositoryApi, refreshToken: string) => client.POST("/auth/refresh", { body: { refreshToken } });
const logoutOn = (client: RepositoryApi, refreshToken: string) => client.POST("/auth/logout", { body: { refreshToken } });

/** The refresh tokens of `tokens` the service still rotates (it should be none). */
async function stillWorking(tokens: string[]): Promise<string[]> {
  const working: string[] = [];
  for (const token of tokens) {
    const res = await refreshOn(api(), token);
    if (res.response.status === 200) working.push(token);
    else expect(res.error).toMatchObject({ status: 401, code: "invalid_refresh_token" });
  }
  return working;
}

/** `size` refreshes of one login's refresh token at once, ROUNDS times: the rounds in which a refresh token survived. */
async function burstRounds(size: number): Promise<string[]> {
  const escaped: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const pair = await login();
    const answers = await Promise.all(
      Array.from({ length: size }, (_, i) => refreshOn(instances[i % instances.length]!, pair.refreshToken)),
    );
    const won = answers.filter((a) => a.response.status === 200);
    // Single use (X-RB-1): one wins; the rest are reuse, refused.
    expect(won, `round ${round}`).toHaveLength(1);
    for (const lost of answers.filter((a) => a.response.status !== 200))
      expect(lost.error, `round ${round}`).toMatchObject({ status: 401, code: "invalid_refresh_token" });
    // The winner's new refresh token first: a use of the old one must not be what revokes it.
    const working = await stillWorking([...won.map((a) => a.data!.refreshToken), pair.refreshToken]);
    if (working.length) escaped.push(`round ${round}: ${working.length} refresh token(s) still work`);
  }
  return escaped;
}

describe("X-RB-12 reuse revokes the whole login under concurrency", () => {
  it("X-RB-12 two refreshes of one token at once: one 200, and afterwards no refresh token of that login works, the winner's new one included (10 rounds)", async () => {
    expect(await burstRounds(2)).toEqual([]);
  });

  it("X-RB-12 five refreshes of one token at once: one 200, and afterwards no refresh token of that login works, the winner's new one included (10 rounds)", async () => {
    expect(await burstRounds(5)).toEqual([]);
  });

  it("X-RB-12 a refresh racing POST /auth/logout of the same token does not outlive the logout: afterwards no refresh token of that login works (10 rounds)", async () => {
    const escaped: string[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const pair = await login();
      // The logout leaves a millisecond later in each round than the one before, so that the
      // rounds cover it landing before, inside and after the rotation. What is asserted holds
      // whatever the order: the delay only spreads the rounds over the window.
      const refreshing = refreshOn(instances[0]!, pair.refreshToken);
      await new Promise((resolve) => setTimeout(resolve, round - 1));
      const [refreshed, loggedOut] = await Promise.all([refreshing, logoutOn(instances[instances.length - 1]!, pair.refreshToken)]);
      expect(loggedOut.response.status, `round ${round}`).toBe(204);
      // Either order is allowed: the refresh before the logout (200) or after it (401).
      if (refreshed.response.status !== 200)
        expect(refreshed.error, `round ${round}`).toMatchObject({ status: 401, code: "invalid_refresh_token" });
      const issued = refreshed.response.status === 200 ? [refreshed.data!.refreshToken] : [];
      const working = await stillWorking([...issued, pair.refreshToken]);
      if (working.length) escaped.push(`round ${round}: ${working.length} refresh token(s) still work`);
    }
    expect(escaped).toEqual([]);
  });
});
