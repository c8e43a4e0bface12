/**
 * The client behind our reverse proxies (TRUST_PROXY, PROXY_HEADER): its address, and the scheme
 * and host it used, read from `X-Forwarded-For`/`-Proto`/`-Host` (default) or the RFC 7239
 * `Forwarded` header, and only as far as our own proxies vouch for them.
 *
 * The chain is walked from the right: the peer of the connection first, then each address the
 * proxies appended, nearest first. Every hop that is one of our proxies is skipped; the first one
 * that is not is the client. So a header a client forges itself is never believed: a trusted proxy
 * appends the address it saw to whatever the client sent, and the walk stops there. With no trusted
 * proxy (the default) the headers are not read at all.
 *
 * Scheme and host come from the same hop that named the client (the outermost trusted proxy),
 * and only when they are plain `http`/`https` and a host name: anything else is ignored. They are
 * never used to build the issuer or any public URL (those are configured: IDENTITY_PUBLIC_URL ...).
 */
import type { IncomingHttpHeaders } from "node:http";
import ipaddr from "ipaddr.js";
import proxyaddr from "proxy-addr";
import parseForwarded from "forwarded-parse";
import type Koa from "koa";
import { isTrustedProxy, type TrustProxy } from "./trusted-proxy.ts";

/** Which header our proxies set: `x-forwarded` (X-Forwarded-For/-Proto/-Host, nginx's and most balancers') or `forwarded` (RFC 7239). */
export type ProxyHeader = "x-forwarded" | "forwarded";

export interface ClientView {
  /** The client's address (IPv4-mapped IPv6 as IPv4). */
  ip: string;
  /** The scheme the client used. */
  protocol: "http" | "https";
  /** The host the client asked for (`Host` when no trusted proxy says otherwise). */
  host: string | undefined;
}

const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

const normalise = (address: string): string | undefined => {
  if (!ipaddr.isValid(address)) return undefined;
  const parsed = ipaddr.parse(address);
  return parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()
    ? (parsed as ipaddr.IPv6).toIPv4Address().toString()
    : parsed.toString();
};

/** Whether the hop at `index` of the chain (0: the peer of the connection) is one of our proxies. */
function trustsHop(trust: TrustProxy, address: string, index: number): boolean {
  if (trust.kind === "none") return false;
  // Behind N proxies, the N nearest hops are ours, whatever their addresses.
  if (trust.kind === "hops") return index < trust.hops;
  return isTrustedProxy(trust, address);
}

/** A `for=` node of RFC 7239 (`192.0.2.43:47011`, `"[2001:db8::1]:4711"`, `unknown`) as its bare address. */
const forNode = (node: string | undefined): string => {
  const value = (node ?? "").trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(value);
  return v4 ? v4[1]! : value;
};

const listOf = (header: string | string[] | undefined): string[] =>
  (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);

/** What the outermost trusted hop reported besides the address. */
interface Hop {
  proto?: string | undefined;
  host?: string | undefined;
}

/**
 * The client as our proxies describe it. `peer` is the connection's remote address, `encrypted`
 * whether that connection is TLS (then the scheme is `https` whatever a header says).
 */
export function clientView(
  peer: string | undefined,
  encrypted: boolean,
  headers: IncomingHttpHeaders,
  trust: TrustProxy,
  mode: ProxyHeader,
): ClientView {
  const direct: ClientView = { ip: normalise(peer ?? "") ?? peer ?? "", protocol: encrypted ? "https" : "http", host: headers.host };
  if (!peer || !trustsHop(trust, peer, 0)) return direct;

  // chain[0] is the peer, chain[i] the address hop i-1 reported; hops[i] what came with chain[i].
  let chain: string[];
  let hops: Hop[];
  if (mode === "forwarded") {
    let elements: Array<Record<string, string>>;
    try {
      elements = headers.forwarded ? parseForwarded(listOf(headers.forwarded).join(",")) : [];
    } catch {
      // A malformed header from our own proxy: believe none of it rather than part.
      return direct;
    }
    const nearestFirst = elements.reverse();
    chain = [peer, ...nearestFirst.map((e) => forNode(e.for))];
    hops = [{}, ...nearestFirst.map((e) => ({ proto: e.proto, host: e.host }))];
  } else {
    // proxy-addr (Express's) walks X-Forwarded-For from the right; trusting every hop here gives the whole chain.
    chain = proxyaddr.all({ connection: { remoteAddress: peer }, headers } as never, () => true);
    const protos = listOf(headers["x-forwarded-proto"]).reverse();
    const hosts = listOf(headers["x-forwarded-host"]).reverse();
    // Proxies that append line up with X-Forwarded-For; one that overwrites leaves a single value, its own.
    const aligned = (values: string[], i: number) => (values.length >= chain.length - 1 ? values[i - 1] : values[0]);
    hops = chain.map((_, i) => (i === 0 ? {} : { proto: aligned(protos, i), host: aligned(hosts, i) }));
  }

  let client = 0;
  while (client + 1 < chain.length && trustsHop(trust, chain[client]!, client)) client += 1;
  // The hop that named the client; an entry that is no address (`unknown`, garbage) stops the walk at the last address a proxy of ours saw.
  let ip = normalise(chain[client]!);
  while (ip === undefined && client > 0) ip = normalise(chain[--client]!);
  const reported = hops[client] ?? {};
  const proto = reported.proto?.toLowerCase();
  return {
    ip: ip ?? direct.ip,
    protocol: encrypted ? "https" : proto === "https" || proto === "http" ? proto : "http",
    host: reported.host && HOST.test(reported.host) ? reported.host : direct.host,
  };
}

/**
 * Koa middleware: `ctx.ip` becomes the client's address (what clientAddress() and every
 * per-address limit read) and `ctx.state.client` the whole view.
 */
export function forwardedClient(trust: TrustProxy, mode: ProxyHeader): Koa.Middleware {
  return async (ctx, next) => {
    const socket = ctx.req.socket as { remoteAddress?: string; encrypted?: boolean };
    const view = clientView(socket.remoteAddress, Boolean(socket.encrypted), ctx.headers, trust, mode);
    ctx.request.ip = view.ip;
    ctx.state.client = view;
    await next();
  };
}
