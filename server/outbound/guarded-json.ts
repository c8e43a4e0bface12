/**
 * A GET of a small JSON document from an address a tenant chose (a client's `jwks_uri`), under
 * the same outbound rules as webhook deliveries: every address the host resolves to, and the one
 * actually connected to, must pass the deployment's address policy (server/webhooks/ssrf.ts), no
 * redirect is followed, one time limit covers the whole exchange, and the body is read up to a
 * size limit. Anything else (a refused address, a non-200 answer, not JSON) throws.
 */
import { Agent, buildConnector, fetch } from "undici";
import { BlockedAddressError, guardedLookup, type AddressPolicy } from "../webhooks/ssrf.ts";

export interface GuardedJsonOptions {
  policy: AddressPolicy;
  timeoutMs?: number;
  maxBytes?: number;
}

export type FetchJson = (url: string) => Promise<unknown>;

export function createGuardedJsonFetcher(o: GuardedJsonOptions): FetchJson {
  const timeoutMs = o.timeoutMs ?? 5_000;
  const maxBytes = o.maxBytes ?? 64 * 1024;
  const connect = buildConnector({ lookup: guardedLookup(o.policy), timeout: timeoutMs } as never);
  // IP literals skip `lookup`: the address connected to is checked as well.
  const guardedConnect: buildConnector.connector = (opts, callback) =>
    connect(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error("no socket"), null);
      const refusal = o.policy.refusal(socket.remoteAddress ?? "");
      if (refusal) {
        socket.destroy();
        return callback(new BlockedAddressError(`connected to ${socket.remoteAddress}, ${refusal}`), null);
      }
      callback(null, socket);
    });
  const dispatcher = new Agent({ connect: guardedConnect, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  return async (url) => {
    const res = await fetch(url, {
      dispatcher,
      redirect: "error",
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`${url} answered ${res.status}`);
    }
    if (Number(res.headers.get("content-length") ?? 0) > maxBytes) {
      await res.body?.cancel();
      throw new Error(`${url} is larger than ${maxBytes} bytes`);
    }
    const text = await res.text();
    if (text.length > maxBytes) throw new Error(`${url} is larger than ${maxBytes} bytes`);
    return JSON.parse(text) as unknown;
  };
}
