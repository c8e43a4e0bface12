/**
 * A free 127.0.0.1 port for a server a test or script starts on a port it must know before it
 * listens (a public URL or issuer built from it, a proxy's upstream list, a child process's env).
 *
 * Why not any free port: between the check that a port is free and the server's `listen`, another
 * process can take it. Inside Linux's ephemeral range (32768-60999) any outgoing connection or
 * port-0 bind on the machine may (CI saw `listen EADDRINUSE 127.0.0.1:37489`, a port taken in that
 * window). So the port is drawn at random from below that range, where only servers asking for a
 * fixed port compete; drawing at random, not counting up from the range's start, keeps parallel
 * test workers (separate processes, each with its own get-port) off the same choice. Callers that
 * can start again (conformance/harness/targets.ts) still retry on EADDRINUSE.
 */
import getPort from "get-port";

const RANGE = { from: 20_000, to: 32_767 };

function* randomCandidates(count: number): Generator<number> {
  for (let i = 0; i < count; i++) yield RANGE.from + Math.floor(Math.random() * (RANGE.to - RANGE.from + 1));
}

export function freePort(): Promise<number> {
  // If every candidate is taken, get-port falls back to a port the system picks.
  return getPort({ host: "127.0.0.1", port: randomCandidates(50) });
}

/** Whether an error is a listen on a port someone else took meanwhile. */
export const isAddressInUse = (error: unknown): boolean => (error as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
