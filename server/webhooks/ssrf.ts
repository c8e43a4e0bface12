/**
 * SSRF guard. Webhook URLs are chosen by users, so a delivery must never reach the service's own
 * network: loopback, private, link-local (cloud metadata at 169.254.169.254), CGNAT, multicast and
 * the other special-purpose ranges of the IANA registries are refused, unless the deployment allows
 * them (WEBHOOK_ALLOW_PRIVATE_TARGETS). The check runs twice: on every address DNS returns (a
 * custom `lookup` for the socket) and on the address the socket actually connected to, so neither
 * a DNS answer that changes between check and use (rebinding) nor an IP literal slips through.
 */
import { BlockList, isIP } from "node:net";
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";

const V4_BLOCKED: Array<[string, number]> = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // CGNAT, RFC 6598
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // TEST-NET-1
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // TEST-NET-2
  ["203.0.113.0", 24], // TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];
const V6_BLOCKED: Array<[string, number]> = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  // IPv4-mapped addresses (::ffff:a.b.c.d) need no rule: BlockList checks them against the IPv4 rules.
  ["64:ff9b::", 96], // NAT64: same
  ["100::", 64], // discard
  ["2001::", 32], // Teredo
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: embeds an IPv4 target
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
];

const blocked = new BlockList();
for (const [net, prefix] of V4_BLOCKED) blocked.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of V6_BLOCKED) blocked.addSubnet(net, prefix, "ipv6");

/** Which addresses a delivery may connect to. */
export interface AddressPolicy {
  /** Null when allowed, else what kind of address it is (for the attempt record and the 400). */
  refusal(address: string): string | null;
}

/** `false` (default: refuse internal ranges), `true` (allow everything), or a comma list of IPs and CIDRs to allow. */
export function createAddressPolicy(allowPrivate: string): AddressPolicy {
  if (allowPrivate === "true") return { refusal: () => null };
  const allowed = new BlockList();
  if (allowPrivate !== "false") {
    for (const entry of allowPrivate.split(",").map((e) => e.trim()).filter(Boolean)) {
      const [net = "", prefix] = entry.split("/");
      const type = isIP(net) === 6 ? "ipv6" : "ipv4";
      if (prefix === undefined) allowed.addAddress(net, type);
      else allowed.addSubnet(net, Number(prefix), type);
    }
  }
  return {
    refusal(address) {
      const family = isIP(address);
      if (family === 0) return "not an IP address";
      const type = family === 6 ? "ipv6" : "ipv4";
      if (!blocked.check(address, type) || allowed.check(address, type)) return null;
      return "a loopback, private, link-local or otherwise internal address";
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
export function guardedLookup(policy: AddressPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "");
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const refusal = policy.refusal(a.address);
        if (refusal) return callback(new BlockedAddressError(`${hostname} resolves to ${a.address}, ${refusal}`) as unknown as NodeJS.ErrnoException, "");
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
  if (url.protocol === "http:" && options.requireHttps) return { ok: false, code: "invalid_url", message: "must be an https URL (plain http is not allowed on this deployment)" };
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
