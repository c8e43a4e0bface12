/**
 * bench:token's peers and verdicts (bench/token/peers.ts, bench/token/report.ts): which peers a run
 * compares against, the target each sets on each engine, and that a verdict holds only when every
 * round meets it. Nothing is started or measured here.
 */
import { describe, expect, it } from "vitest";
import type { RunResult } from "../../bench/token/load.ts";
import { choosePeers, type RunSetting, targetOf } from "../../bench/token/peers.ts";
import { type Pairing, verdictOf } from "../../bench/token/report.ts";

const sqlite: RunSetting = { engine: "SQLite", concurrency: 50, instances: 1 };
const postgres: RunSetting = { engine: "PostgreSQL", concurrency: 50, instances: 1 };
const names = (env: NodeJS.ProcessEnv) => choosePeers(env).peers.map((p) => p.name);
const peer = (name: string) => choosePeers({ BENCH_PEERS: name }).peers[0]!;

describe("bench:token peers", () => {
  it("compares against oidc-provider on a durable store and in memory by default", () => {
    expect(names({})).toEqual(["oidc-provider-durable", "oidc-provider-memory"]);
  });

  it("takes BENCH_PEERS as a comma list and refuses unknown or repeated names", () => {
    expect(names({ BENCH_PEERS: "keycloak, oidc-provider-durable" })).toEqual(["keycloak", "oidc-provider-durable"]);
    expect(() => choosePeers({ BENCH_PEERS: "hydra" })).toThrow(/unknown peer hydra/);
    expect(() => choosePeers({ BENCH_PEERS: "keycloak,keycloak" })).toThrow(/twice/);
  });

  it("keeps BENCH_THEIRS_STORE's single peer when BENCH_PEERS is unset", () => {
    expect(names({ BENCH_THEIRS_STORE: "memory" })).toEqual(["oidc-provider-memory"]);
    expect(names({ BENCH_THEIRS_STORE: "sqlite" })).toEqual(["oidc-provider-durable"]);
    expect(choosePeers({ BENCH_THEIRS_STORE: "postgres" }).theirsStore).toBe("postgres");
    expect(() => choosePeers({ BENCH_THEIRS_STORE: "redis" })).toThrow(/expected memory, sqlite or postgres/);
  });

  it("sets each peer's target by engine", () => {
    expect(peer("oidc-provider-durable").target(sqlite)).toEqual({ kind: "verdict", ratio: 1.5 });
    expect(peer("oidc-provider-durable").target(postgres)).toEqual({ kind: "verdict", ratio: 1.5 });
    expect(peer("oidc-provider-memory").target(sqlite)).toEqual({ kind: "verdict", ratio: 1 });
    expect(peer("oidc-provider-memory").target(postgres).kind).toBe("context");
    expect(peer("keycloak").target(postgres)).toEqual({ kind: "verdict", ratio: 4 });
  });

  it("holds the code exchange and the refresh to the target, and shows client_credentials as context", () => {
    const durable = peer("oidc-provider-durable");
    expect(targetOf(durable, "code", sqlite)).toEqual({ kind: "verdict", ratio: 1.5 });
    expect(targetOf(durable, "refresh", postgres)).toEqual({ kind: "verdict", ratio: 1.5 });
    expect(targetOf(durable, "cc", sqlite)).toMatchObject({ kind: "context", ratio: 1.5 });
    expect(targetOf(peer("keycloak"), "cc", postgres)).toMatchObject({ kind: "context", ratio: 4 });
  });

  it("gives no verdict against a durable store that is not ours' engine, or with several instances of ours", () => {
    expect(peer("oidc-provider-durable").target({ ...postgres, theirsStore: "sqlite" }).kind).toBe("context");
    expect(peer("oidc-provider-durable").target({ ...sqlite, instances: 2 }).kind).toBe("context");
  });
});

describe("bench:token verdicts", () => {
  const run = (rps: number) => ({ rps }) as RunResult;
  const pairing = (ours: number[], theirs: number[]): Pairing => ({
    grant: "code",
    peer: peer("oidc-provider-durable"),
    target: { kind: "verdict", ratio: 1.5 },
    ours: ours.map(run),
    theirs: theirs.map(run),
  });

  it("is met only when every round reaches the target, not the mean", () => {
    expect(verdictOf(pairing([300, 300], [200, 100]))).toBe("MET");
    expect(verdictOf(pairing([300, 900], [201, 100]))).toBe("NOT MET");
  });

  it("is context for a target shown without a verdict", () => {
    expect(verdictOf({ ...pairing([100], [100]), target: { kind: "context", ratio: 1, why: "context" } })).toBe("context");
  });
});
