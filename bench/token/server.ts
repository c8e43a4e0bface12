/**
 * One benchmark server in its own process (`fork`ed by bench/token.ts with `--import tsx`):
 * starts the kind named by argv[2], reports `ready`, then mints codes on request and stops on
 * `stop` or when the driver goes away.
 */
import type { BenchServer, Command, Reply, ServerKind } from "./protocol.ts";
import { startOurs } from "./ours.ts";
import { startOidcProvider } from "./oidc-provider.ts";
import { startCeiling } from "./ceiling.ts";
import { runProfiler } from "../cpuprofile.ts";

const starters: Record<ServerKind, () => Promise<BenchServer>> = {
  ours: startOurs,
  "oidc-provider": startOidcProvider,
  ceiling: startCeiling,
};

const send = (reply: Reply) => process.send!(reply);

/** BENCH_PROFILE_RUNS_DIR: a CPU profile of each timed run only (not start-up, not code minting). */
/** (Files of a further instance, BENCH_INSTANCES, are named `<kind>-i<n>-runNN`; of a named peer, `<name>-runNN`.) */
const serverName = process.env.BENCH_SERVER_NAME || process.argv[2]!;
const profilePrefix = process.env.BENCH_INSTANCE ? `${serverName}-i${process.env.BENCH_INSTANCE}` : serverName;
const runProfiles = process.env.BENCH_PROFILE_RUNS_DIR ? runProfiler(process.env.BENCH_PROFILE_RUNS_DIR, profilePrefix) : undefined;

async function main(): Promise<void> {
  const kind = process.argv[2] as ServerKind;
  const start = starters[kind];
  if (!start || !process.send) throw new Error(`usage: fork with IPC, argv[2] one of ${Object.keys(starters).join(", ")}`);
  const server = await start();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.close();
  };
  process.on("disconnect", () => void stop().finally(() => process.exit(0)));
  process.on("message", async (command: Command) => {
    try {
      if (command.type === "mint") send({ id: command.id, type: "minted", codes: await server.mintCodes(command.count) });
      else if (command.type === "cpu") {
        // A run's profile starts before its first reading and stops after its last one.
        if (command.phase === "start") await runProfiles?.start();
        const { user, system } = process.cpuUsage();
        const loopMicros = performance.eventLoopUtilization().active * 1000;
        if (command.phase === "end") await runProfiles?.stop();
        send({ id: command.id, type: "cpu", micros: user + system, loopMicros });
      } else if (command.type === "stop") {
        await stop();
        send({ id: command.id, type: "stopped" });
        process.disconnect?.();
      }
    } catch (err) {
      send({ id: command.id, type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    }
  });
  send({
    type: "ready",
    url: server.url,
    tokenPath: server.tokenPath,
    client: server.client,
    notes: server.notes,
    ...(server.join ? { join: server.join } : {}),
  });
}

// A server that failed part-way may already listen or hold a pool (oidc-provider listens before it opens
// BENCH_THEIRS_STORE's store): exit once the error is sent, or the process outlives the benchmark.
main().catch((err) => {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  if (process.send) process.send({ type: "error", message } satisfies Reply, () => process.exit(1));
  else {
    console.error(message);
    process.exit(1);
  }
});
