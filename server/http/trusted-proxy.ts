/**
 * Which peers are our own reverse proxies (TRUST_PROXY), so that what they add to a request may be
 * believed: the client's address, scheme and host (X-Forwarded-* and Forwarded, server/http/forwarded.ts,
 * X-API-13) and the request id (`X-Request-Id`, X-API-12). Default: none, and every header a
 * client sends about itself is ignored.
 *
 * TRUST_PROXY is a hop count (`1`: the service is reached through one proxy, so the peer of every
 * connection is that proxy) or a comma-separated list of proxy addresses and CIDR ranges
 * (`10.0.0.0/8, 2001:db8::1`). `0`, `false` or unset: trust no one.
 */
import ipaddr from "ipaddr.js";

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

export type TrustProxy = { kind: "none" } | { kind: "hops"; hops: number } | { kind: "addresses"; ranges: Range[] };

export const TRUST_NONE: TrustProxy = { kind: "none" };

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) as the IPv4 address it carries. */
const normalise = (address: ipaddr.IPv4 | ipaddr.IPv6) =>
  address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;

/** Parses TRUST_PROXY; throws an Error naming the entry that is neither a hop count nor an address or CIDR. */
export function parseTrustProxy(value: string | undefined): TrustProxy {
  const text = (value ?? "").trim();
  if (text === "" || text === "false" || text === "0") return TRUST_NONE;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 10) throw new Error("a hop count must be between 0 and 10");
    return { kind: "hops", hops };
  }
  const ranges = text.split(",").map((entry): Range => {
    const e = entry.trim();
    try {
      if (e.includes("/")) {
        const [net, bits] = ipaddr.parseCIDR(e);
        // An IPv4-mapped range (`::ffff:10.0.0.0/104`) is its IPv4 range.
        return net.kind() === "ipv6" && (net as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96
          ? [normalise(net), bits - 96]
          : [net, bits];
      }
      const address = normalise(ipaddr.parse(e));
      return [address, address.kind() === "ipv4" ? 32 : 128];
    } catch {
      throw new Error(`"${e}" is not a hop count, an IP address or a CIDR range`);
    }
  });
  return { kind: "addresses", ranges };
}

/** Whether `address`, the peer of a connection, is one of our proxies. */
export function isTrustedProxy(trust: TrustProxy, address: string | undefined): boolean {
  if (trust.kind === "none" || !address) return false;
  // Behind N proxies every connection comes from the nearest one.
  if (trust.kind === "hops") return trust.hops > 0;
  let peer: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    peer = normalise(ipaddr.parse(address));
  } catch {
    return false;
  }
  return trust.ranges.some(([net, bits]) => net.kind() === peer.kind() && peer.match(net, bits));
}
