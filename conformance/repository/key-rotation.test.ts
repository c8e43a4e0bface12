/**
 * The repository service's two signing keys rotate (X-RB-11), on two instances of one database
 * and one injected clock, without a restart: the rotation is made as
 * `npm run admin -- repository rotate-keys` makes it (server/keys/rotation.ts). Token lifetimes
 * are shortened (refresh 2 h, agent 3 h) so the whole life of the old keys fits the test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryApi } from "../harness/api.ts";
import { keyRingRows } from "../harness/key-ring.ts";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { loadConfig } from "../../app/load-config.ts";
import { rotateKey } from "../../server/keys/rotation.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { repositoryKeyPurposes } from "../../handlers/repository/signing-keys.ts";
import { repositoryTokenLifetimesOf } from "../../handlers/repository/config.ts";

const LIFETIMES = { REPOSITORY_REFRESH_TTL_SECONDS: "7200", REPOSITORY_AGENT_TTL_SECONDS: "10800" };

let rb: RepositoryTarget;
let other: { url: string; close(): Promise<void> } | undefined;
beforeAll(async () => {
  rb = await repositoryTarget({ env: LIFETIMES });
  if (rb.anotherInstance) other = await rb.anotherInstance();
});
afterAll(async () => {
  await other?.close();
  await rb?.close();
});

const kid = (token: string) => decodeJwt(token).header.kid as string;

describe("X-RB-11 signing keys an operator rotates", () => {
  it("X-RB-11 the user and agent keys rotate on every instance without a restart: tokens signed before, during and after are accepted until they expire, and each old key is deleted once no token it signed can be valid", async (ctx) => {
    if (!rb.clock || !rb.service || !other) return skipOnDeployment(ctx, NEEDS.clock);
    const instances = [rb.url, other.url];
    const clock = rb.clock;
    clock.freeze();
    const t0 = clock.now().getTime();
    const at = (seconds: number) => clock.advance(t0 + seconds * 1000 - clock.now().getTime());
    const login = async (url: string) => {
      const res = await repositoryApi(url).POST("/auth/login", { body: rb.user });
      expect(res.response.status).toBe(200);
      return res.data!;
    };
    const refresh = async (url: string, refreshToken: string) => {
      const res = await repositoryApi(url).POST("/auth/refresh", { body: { refreshToken } });
      expect(res.response.status).toBe(200);
      return res.data!;
    };
    const accepted = async (accessToken: string) => {
      for (const url of instances)
        expect((await repositoryApi(url, { token: accessToken }).GET("/auth/me")).response.status, url).toBe(200);
    };
    // Expired tokens: raw, on purpose.
    const refused = async (accessToken: string) => {
      for (const url of instances) expect((await request(url, "GET", "/auth/me", { token: accessToken })).status, url).toBe(401);
    };
    const agentAccepted = async (agentToken: string) => {
      for (const url of instances)
        expect([200, 204]).toContain((await repositoryApi(url, { token: agentToken }).POST("/buildagent/poll")).response.status);
    };
    const agent = async (url: string, accessToken: string) => {
      const res = await repositoryApi(url, { token: accessToken }).POST("/buildagent/register", { body: { name: `runner-${Date.now()}` } });
      expect(res.response.status).toBe(201);
      return res.data!.agentToken;
    };

    const before = await login(rb.url);
    const agentBefore = await agent(rb.url, before.accessToken);
    const [oldUser, oldAgent] = [kid(before.accessToken), kid(agentBefore)];

    const purposes = repositoryKeyPurposes(repositoryTokenLifetimesOf(loadConfig(LIFETIMES)));
    const db = rb.service.db;
    const rotations = [];
    for (const purpose of [purposes.user, purposes.agent]) {
      rotations.push(await rotateKey({ db, purpose, now: clock.now(), delaySeconds: 600, encryption: keyEncryption() }));
    }
    const [newUser, newAgent] = rotations.map((r) => r.kid);

    // During the delay: the old keys still sign, on both instances.
    at(61);
    const during = await login(other.url);
    const refreshedDuring = await refresh(other.url, before.refreshToken);
    expect([kid(during.accessToken), kid(during.refreshToken), kid(refreshedDuring.accessToken)]).toEqual([oldUser, oldUser, oldUser]);

    // After it: the new keys sign on both instances, and every earlier token is still accepted.
    at(601);
    for (const url of instances) {
      const after = await login(url);
      expect([kid(after.accessToken), kid(after.refreshToken)]).toEqual([newUser, newUser]);
      expect(kid(await agent(url, after.accessToken))).toBe(newAgent);
    }
    await accepted(before.accessToken);
    await accepted(during.accessToken);
    await agentAccepted(agentBefore);

    // A refresh token of the old key works until it expires (2 h), and what it gives is signed with the new key.
    at(7000);
    const late = await refresh(rb.url, refreshedDuring.refreshToken);
    expect([kid(late.accessToken), kid(late.refreshToken)]).toEqual([newUser, newUser]);
    await refused(during.accessToken);

    // The old user key retires 600 + 7200 + 60 s in; the agent key, whose tokens live 3 h, stays until 600 + 10800 + 60 s.
    at(7861);
    await accepted(late.accessToken);
    await agentAccepted(agentBefore);
    expect((await keyRingRows(db, "repository-user")).map((r) => r.kid)).toEqual([newUser]);
    expect((await keyRingRows(db, "repository-agent")).map((r) => r.kid).sort()).toEqual([oldAgent, newAgent].sort());
    at(11461);
    // The agent token has expired: raw, on purpose.
    for (const url of instances) expect((await request(url, "POST", "/buildagent/poll", { token: agentBefore })).status).toBe(401);
    expect((await keyRingRows(db, "repository-agent")).map((r) => r.kid)).toEqual([newAgent]);
  });
});
