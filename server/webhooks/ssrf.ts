/**
 * SSRF guard. Webhook URLs are chosen by users, so a delivery must never reach the service's own
 * network: only addresses that ipaddr.js classifies as global `unicast` are allowed; loopback,
 * private, link-local (cloud metadata at 169.254.169.254), CGNAT, multicast and every other
 * special-purpose range of the IANA registries are refused, unless the deployment allows them
 * (WEBHOOK_ALLOW_PRIVATE_TARGETS). The check runs on every address DNS returns (a custom `lookup`
 * for the socket) and on the address the socket actually connected to, so neither a DNS answer
 * that changes between check and use (rebinding) nor an IP literal slips through.
 *
 * IPv6 addresses that carry an IPv4 address (X-ID-WH-1):
 * - IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d` (RFC 6145) and the NAT64
 *   well-known prefix `64:ff9b::/96` (RFC 6052 §2.1, what DNS64 synthesises on IPv6-only networks)
 *   are judged by the IPv4 address inside, so a public one stays reachable;
 * - the NAT64 local-use prefix `64:ff9b:1::/48` (RFC 8215; where the IPv4 address sits depends on
 *   the operator's prefix length), 6to4 `2002::/16` and Teredo `2001::/32` are refused whole;
 * - IPv4-compatible `::a.b.c.d` (deprecated by RFC 4291 §2.5.5.1) is refused whole: ipaddr.js
 *   calls it `unicast`, so that rule is ours, as is refusing any other IPv6 address outside
 *   2000::/3, the only space IANA allocates for global unicast.
 * Hosts written as IPv4 in other notations (`0x7f000001`, `2130706433`, `017700000001`, `127.1`)
 * never reach this module as such: the WHATWG URL parser, the only one on the registration and
 * delivery paths, turns them into dotted decimal (`127.0.0.1`) first.
 */
import { isIP } from "node:net";
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** IPv6 ranges (ipaddr.js names) whose last 32 bits are an IPv4 address that decides. */
const EMBEDS_IPV4 = new Set(["ipv4Mapped", "rfc6145"]);
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");
/** The only IPv6 space allocated for global unicast (IANA); ipaddr.js calls the IETF-reserved rest `unicast` too. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/**
 * The address that decides and the ipaddr.js name of its range (`unicast` for a public one): an
 * IPv6 address that embeds an IPv4 one is judged by the IPv4 address (`via` names the carrier).
 */
export function classify(address: Address): { decisive: Address; range: string; via?: string } {
  if (address.kind() === "ipv4") return { decisive: address, range: address.range() };
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  if (EMBEDS_IPV4.has(range) || (range === "rfc6052" && v6.match(NAT64_WELL_KNOWN))) {
    const v4 = new ipaddr.IPv4(v6.toByteArray().slice(12));
    return { decisive: v4, range: v4.range(), via: range };
  }
  if (range === "unicast" && v6.match(IPV4_COMPATIBLE)) return { decisive: v6, range: "ipv4Compatible" };
  if (range === "unicast" && !v6.match(GLOBAL_UNICAST_V6)) return { decisive: v6, range: "outside 2000::/3" };
  return { decisive: v6, range };
}

/** Which addresses a delivery may connect to. */
export interface AddressPolicy {
  /** Null when allowed, else what kind of address it is (for the attempt record and the 400). */
  refusal(address: string): string | null;
}

/** `false` (default: refuse internal ranges), `true` (allow everything), or a comma list of IPs and CIDRs to allow. */
export function createAddressPolicy(allowPrivate: string): AddressPolicy {
  if (allowPrivate === "true") return { refusal: () => null };
  const allowed: Array<[Address, number]> = [];
  if (allowPrivate !== "false") {
    for (const entry of allowPrivate
      .split(",")
      .map((e) => e.trim())
      .filter(Boolean)) {
      const [net = "", prefix] = entry.split("/");
      if (!isIP(net)) throw new Error(`WEBHOOK_ALLOW_PRIVATE_TARGETS: ${entry} is not an IP address or CIDR`);
      const address = ipaddr.parse(net);
      allowed.push([address, prefix === undefined ? (address.kind() === "ipv4" ? 32 : 128) : Number(prefix)]);
    }
  }
  const isAllowed = (address: Address) => allowed.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));
  return {
    refusal(text) {
      // Node's own notion of an address literal: no other IPv4 notation gets here.
      if (isIP(text) === 0) return "not an IP address";
      const address = ipaddr.parse(text);
      const { decisive, range, via } = classify(address);
      if (range === "unicast" || isAllowed(address) || isAllowed(decisive)) return null;
      const kind = via ? `${range}: IPv4 ${decisive.toString()} inside ${via}` : range;
      return `a loopback, private, link-local or otherwise internal address (${kind})`;
    },
  };
}

/** Raised (as a connection failure) when a delivery would reach a refused address. */
export class BlockedAddressError extends Error {
  readonly code = "ERR_WEBHOOK_BLOCKED_ADDRESS";
  constructor(message: string) {
    super(message);
    this.name = "BlockedAddressError";
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net/tls.connect that refuses the host when any of its addresses is refused. */
export function guardedLookup(policy: AddressPolicy, lookup: typeof dnsLookup = dnsLookup) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "");
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const refusal = policy.refusal(a.address);
        if (refusal)
          return callback(
            new BlockedAddressError(`${hostname} resolves to ${a.address}, ${refusal}`) as unknown as NodeJS.ErrnoException,
            "",
          );
      }
      if (options.all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "");
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Checks a webhook URL when it is registered, for a clear 400 (the delivery-time guard is what
 * actually protects): the scheme, and every address its host resolves to now. A name that does
 * not resolve (yet) is accepted; its deliveries fail until it does.
 */
export async function checkWebhookUrl(
  raw: string,
  options: { policy: AddressPolicy; requireHttps: boolean; resolve?: (host: string) => Promise<string[]> },
): Promise<{ ok: true } | { ok: false; code: "invalid_url" | "insecure_url"; message: string }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, code: "invalid_url", message: "is not an absolute URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { ok: false, code: "invalid_url", message: "must be an https URL" };
  if (url.protocol === "http:" && options.requireHttps)
    return { ok: false, code: "invalid_url", message: "must be an https URL (plain http is not allowed on this deployment)" };
  if (url.username || url.password) return { ok: false, code: "invalid_url", message: "must not carry credentials" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : await (options.resolve ?? resolveAll)(host).catch(() => [] as string[]);
  for (const address of addresses) {
    const refusal = options.policy.refusal(address);
    if (refusal) return { ok: false, code: "insecure_url", message: `resolves to ${address}, ${refusal}` };
  }
  return { ok: true };
}

/** Every address of a host, with a short time limit so a slow resolver cannot stall a request. */
function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("DNS timeout")), 2000);
    dnsLookup(host, { all: true }, (err, addresses) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(addresses.map((a) => a.address));
    });
  });
}
