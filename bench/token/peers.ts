/**
 * The peers bench/token.ts compares ours against, and the target each one sets: adding a peer is one
 * entry in PEERS (its name, how to start it, the ratio ours must reach against it).
 *
 * - `oidc-provider-durable`: oidc-provider on a durable store with ours' guarantee (an answer only
 *   after its write is committed), on ours' engine: SQLite when ours is on SQLite, the same
 *   PostgreSQL server when BENCH_DATABASE_URL is set (bench/token/oidc-provider-adapter.ts). The peer
 *   a team would deploy: ours must reach 1.5× on either engine.
 * - `oidc-provider-memory`: oidc-provider's in-memory store, which keeps nothing across a restart
 *   (its docs: fit to "develop, configure and generally just play around"). Context for what
 *   durability costs: a durable server no slower than one that keeps nothing (1.0×) on SQLite; on
 *   PostgreSQL, where every write is a round trip to another process, shown without a verdict.
 * - `keycloak`: Keycloak on the same PostgreSQL, configured for the same work; ours must reach 4×.
 *   Its module (bench/token/keycloak.ts) exports `startKeycloak(concurrency)`, which returns a
 *   started `Server` (bench/token/process.ts).
 *
 * A target holds for every round of a run. The targets are the code exchange's and the refresh
 * rotation's, where a durable store is written; `client_credentials` stores nothing on either side
 * (a signed token and no grant), so its row is context against every peer (targetOf).
 */
import { startServer, type Server } from "./process.ts";

/** The grants each round measures: the code exchange, the refresh rotation, client_credentials. */
export type Grant = "code" | "refresh" | "cc";
export const GRANTS: readonly Grant[] = ["code", "refresh", "cc"];

export type Engine = "SQLite" | "PostgreSQL";

/** What a run is: where ours keeps its state, and what a peer is started with. */
export interface RunSetting {
  engine: Engine;
  concurrency: number;
  /** Processes of ours (BENCH_INSTANCES): above 1 no peer runs the same way, so no verdict. */
  instances: number;
  /** BENCH_THEIRS_STORE when set: the durable peer's store, even when it is not ours' engine. */
  theirsStore?: "sqlite" | "postgres";
}

/** The ratio ours must reach against a peer in every round, or why the peer is context only. */
export type Target = { kind: "verdict"; ratio: number } | { kind: "context"; ratio?: number; why: string };

export interface Peer {
  /** Its name in BENCH_PEERS and in the results. */
  name: string;
  /** One line on what it is in this run. */
  describe(setting: RunSetting): string;
  start(setting: RunSetting): Promise<Server>;
  target(setting: RunSetting): Target;
  /** The grants it is measured on (all three unless it says otherwise). */
  grants?: readonly Grant[];
}

const verdict = (ratio: number): Target => ({ kind: "verdict", ratio });

/** The durable peer's store: ours' engine, unless BENCH_THEIRS_STORE says otherwise. */
const durableStore = (s: RunSetting) => s.theirsStore ?? (s.engine === "SQLite" ? "sqlite" : "postgres");
const oursEngineStore = (s: RunSetting) => (s.engine === "SQLite" ? "sqlite" : "postgres");

/** Starts oidc-provider in its own process on `store` (bench/token/oidc-provider.ts reads BENCH_THEIRS_STORE). */
const startOidcProvider = (name: string, store: "memory" | "sqlite" | "postgres", s: RunSetting) =>
  startServer("oidc-provider", s.concurrency, 1, { BENCH_THEIRS_STORE: store, BENCH_SERVER_NAME: name });

/** Ours on several processes against a peer on one measures something else: no verdict then. */
function unlessSeveralInstances(s: RunSetting, target: Target): Target {
  if (s.instances <= 1) return target;
  return { kind: "context", ratio: target.ratio, why: `ours on ${s.instances} processes, the peer on one` };
}

interface KeycloakModule {
  startKeycloak(concurrency: number): Promise<Server>;
}

export const PEERS: readonly Peer[] = [
  {
    name: "oidc-provider-durable",
    describe: (s) => `oidc-provider on a durable ${durableStore(s) === "sqlite" ? "SQLite" : "PostgreSQL"} store`,
    start: (s) => startOidcProvider("oidc-provider-durable", durableStore(s), s),
    target: (s) =>
      unlessSeveralInstances(
        s,
        durableStore(s) === oursEngineStore(s)
          ? verdict(1.5)
          : { kind: "context", ratio: 1.5, why: `its store (BENCH_THEIRS_STORE=${durableStore(s)}) is not ours' engine` },
      ),
  },
  {
    name: "oidc-provider-memory",
    describe: () => "oidc-provider's in-memory store (nothing durable)",
    start: (s) => startOidcProvider("oidc-provider-memory", "memory", s),
    target: (s) =>
      unlessSeveralInstances(
        s,
        s.engine === "SQLite" ? verdict(1.0) : { kind: "context", ratio: 1.0, why: "on PostgreSQL the in-memory store is context" },
      ),
  },
  {
    name: "keycloak",
    describe: () => "Keycloak on the same PostgreSQL",
    async start(s) {
      // By a computed specifier: the module is optional, and the benchmark runs without it.
      const specifier = new URL("./keycloak.ts", import.meta.url).href;
      const module = (await import(specifier).catch((err: unknown) => {
        throw new Error(`BENCH_PEERS=keycloak: ${specifier} did not load: ${err instanceof Error ? err.message : String(err)}`);
      })) as KeycloakModule;
      return module.startKeycloak(s.concurrency);
    },
    target: (s) =>
      unlessSeveralInstances(
        s,
        s.engine === "PostgreSQL" ? verdict(4) : { kind: "context", ratio: 4, why: "Keycloak's target is on the same PostgreSQL" },
      ),
  },
];

/** The peer's target for one grant: `client_credentials` is context (nothing stored on either side). */
export function targetOf(peer: Peer, grant: Grant, setting: RunSetting): Target {
  const target = peer.target(setting);
  if (grant !== "cc" || target.kind === "context") return target;
  return {
    kind: "context",
    ratio: target.ratio,
    why: "client_credentials stores nothing: the targets are the code exchange's and the refresh's",
  };
}

export const DEFAULT_PEERS = "oidc-provider-durable,oidc-provider-memory";

/**
 * The peers of this run: BENCH_PEERS (a comma list of PEERS' names). Without it, BENCH_THEIRS_STORE
 * (the single-peer setting it replaces) picks one peer as it used to: `memory` the in-memory store,
 * `sqlite` or `postgres` the durable one on that store; without either, DEFAULT_PEERS.
 */
export function choosePeers(env: NodeJS.ProcessEnv): { peers: Peer[]; theirsStore?: "sqlite" | "postgres" } {
  const store = env.BENCH_THEIRS_STORE;
  if (store !== undefined && store !== "memory" && store !== "sqlite" && store !== "postgres")
    throw new Error(`BENCH_THEIRS_STORE=${store}: expected memory, sqlite or postgres`);
  const theirsStore = store === "sqlite" || store === "postgres" ? store : undefined;
  const list =
    env.BENCH_PEERS ?? (store === undefined ? DEFAULT_PEERS : store === "memory" ? "oidc-provider-memory" : "oidc-provider-durable");
  const names = list
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0) throw new Error("BENCH_PEERS names no peer");
  const peers = names.map((name) => {
    const peer = PEERS.find((p) => p.name === name);
    if (!peer) throw new Error(`BENCH_PEERS: unknown peer ${name}; expected some of ${PEERS.map((p) => p.name).join(", ")}`);
    return peer;
  });
  if (new Set(names).size !== names.length) throw new Error(`BENCH_PEERS names a peer twice: ${list}`);
  return { peers, ...(theirsStore ? { theirsStore } : {}) };
}
