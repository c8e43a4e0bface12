/**
 * One benchmark server in its own process (`fork`ed by bench/token.ts with `--import tsx`):
 * starts the kind named by argv[2], reports `ready`, then mints codes on request and stops on
 * `stop` or when the driver goes away.
 */
import type { BenchServer, Command, Reply, ServerKind } from "./protocol.ts";
import { startOurs } from "./ours.ts";
import { startOidcProvider } from "./oidc-provider.ts";
import { startCeiling } from "./ceiling.ts";

const starters: Record<ServerKind, () => Promise<BenchServer>> = {
  ours: startOurs,
  "oidc-provider": startOidcProvider,
  ceiling: startCeiling,
};

const send = (reply: Reply) => process.send!(reply);

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
        const { user, system } = process.cpuUsage();
        send({ id: command.id, type: "cpu", micros: user + system, loopMicros: performance.eventLoopUtilization().active * 1000 });
      } else if (command.type === "stop") {
        await stop();
        send({ id: command.id, type: "stopped" });
        process.disconnect?.();
      }
    } catch (err) {
      send({ id: command.id, type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    }
  });
  send({ type: "ready", url: server.url, tokenPath: server.tokenPath, client: server.client, notes: server.notes });
}

main().catch((err) => {
  process.send?.({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Reply);
  process.exitCode = 1;
  process.disconnect?.();
});
