/**
 * Requests from a chosen client address, so one test can be several clients (a victim and a
 * guesser) of a service that counts per address. On Linux every address of 127.0.0.0/8 is the
 * loopback interface: a connection bound to 127.0.0.2 reaches a service on 127.0.0.1, and the
 * service sees 127.0.0.2 as the peer. Only for services the suite runs itself.
 */
import { Agent, fetch as undiciFetch } from "undici";

const agents = new Map<string, Agent>();

/** A `fetch` whose connections leave from `address` (e.g. "127.0.0.2"). */
export function fetchFrom(address: string): typeof fetch {
  let agent = agents.get(address);
  if (!agent) {
    agent = new Agent({ localAddress: address });
    agents.set(address, agent);
  }
  const dispatcher = agent;
  return ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}

/** A loopback address not handed out before in this process (127.0.1.1, 127.0.1.2 …): a client no test has been yet. */
let handedOut = 0;
export function freshLoopbackAddress(): string {
  handedOut += 1;
  return `127.0.${1 + Math.floor(handedOut / 250)}.${1 + (handedOut % 250)}`;
}
