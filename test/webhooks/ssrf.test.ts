/**
 * The webhook address guard (server/webhooks/ssrf.ts) over a table of address forms (X-ID-WH-1):
 * the addresses themselves, what the WHATWG URL parser makes of other IPv4 notations (the only URL
 * parser on the registration and delivery paths), DNS answers at registration and delivery, and
 * the WEBHOOK_ALLOW_PRIVATE_TARGETS escape hatch.
 */
import { describe, expect, it } from "vitest";
import { okReceiver } from "./ok-receiver.ts";
import type { LookupAddress } from "node:dns";
import { BlockedAddressError, checkWebhookUrl, createAddressPolicy, guardedLookup } from "../../server/webhooks/ssrf.ts";
import { createSender } from "../../server/webhooks/sender.ts";

const guard = createAddressPolicy("false");

/** Internal addresses, each in the forms that reach it. */
const REFUSED: Array<[address: string, what: string]> = [
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.0.0.12", "RFC 1918"],
  ["172.16.5.4", "RFC 1918"],
  ["192.168.1.1", "RFC 1918"],
  ["169.254.169.254", "link-local, cloud metadata"],
  ["100.64.0.1", "CGNAT"],
  ["0.0.0.0", "this network"],
  ["255.255.255.255", "broadcast"],
  ["224.0.0.1", "multicast"],
  ["240.0.0.1", "reserved"],
  ["192.0.2.1", "documentation"],
  ["198.18.0.1", "benchmarking"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local with a zone"],
  ["fd00::1", "unique local"],
  ["fec0::1", "site-local"],
  ["ff02::1", "multicast"],
  ["100::1", "discard"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["5f00::1", "segment routing"],
  ["::1:0:0:1", "IETF-reserved, outside 2000::/3"],
  // IPv4 inside IPv6:
  ["::7f00:1", "IPv4-compatible ::127.0.0.1"],
  ["::a9fe:a9fe", "IPv4-compatible ::169.254.169.254"],
  ["::808:808", "IPv4-compatible, even of a public address (deprecated form)"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["0:0:0:0:0:ffff:a9fe:a9fe", "IPv4-mapped metadata, long form"],
  ["::ffff:10.1.2.3", "IPv4-mapped private"],
  ["::ffff:0:127.0.0.1", "IPv4-translated loopback (RFC 6145)"],
  ["64:ff9b::127.0.0.1", "NAT64 well-known prefix, loopback"],
  ["64:ff9b::a9fe:a9fe", "NAT64 well-known prefix, metadata"],
  ["64:ff9b::c0a8:101", "NAT64 well-known prefix, RFC 1918"],
  ["64:ff9b:1::7f00:1", "NAT64 local-use prefix"],
  ["64:ff9b:1:7f00:1::", "NAT64 local-use prefix, /64 embedding"],
  ["64:ff9b:1::808:808", "NAT64 local-use prefix, whatever it embeds"],
  ["2002:7f00:1::1", "6to4 of loopback"],
  ["2002:a9fe:a9fe::1", "6to4 of metadata"],
  ["2002:808:808::1", "6to4, whatever it embeds"],
  ["2001::1", "Teredo"],
  ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo, client 127.0.0.1 obfuscated"],
  // Not an address in Node's own notation: never connected to.
  ["127.1", "short IPv4 notation"],
  ["0x7f000001", "hex IPv4 notation"],
  ["2130706433", "decimal IPv4 notation"],
  ["localhost", "a name"],
];
const ALLOWED: Array<[address: string, what: string]> = [
  ["93.184.215.14", "public IPv4"],
  ["8.8.8.8", "public IPv4"],
  ["2606:4700:4700::1111", "public IPv6"],
  ["2a00:1450:4001:80b::200e", "public IPv6"],
  ["::ffff:93.184.215.14", "IPv4-mapped public"],
  ["64:ff9b::5db8:d70e", "NAT64 of a public address (what DNS64 gives IPv6-only hosts)"],
];

describe("the address table (X-ID-WH-1)", () => {
  for (const [address, what] of REFUSED) {
    it(`X-ID-WH-1 refuses ${address} (${what})`, () => {
      expect(guard.refusal(address)).toEqual(expect.any(String));
    });
  }
  for (const [address, what] of ALLOWED) {
    it(`X-ID-WH-1 allows ${address} (${what})`, () => {
      expect(guard.refusal(address)).toBeNull();
    });
  }

  it("X-ID-WH-1 the refusal names the range, and the IPv4 address inside an IPv6 one", () => {
    expect(guard.refusal("::ffff:169.254.169.254")).toContain("linkLocal: IPv4 169.254.169.254 inside ipv4Mapped");
    expect(guard.refusal("64:ff9b::7f00:1")).toContain("loopback: IPv4 127.0.0.1 inside rfc6052");
    expect(guard.refusal("::7f00:1")).toContain("ipv4Compatible");
    expect(guard.refusal("2001::1")).toContain("teredo");
  });
});

describe("URLs as the registration and delivery paths parse them (WHATWG URL)", () => {
  const internalUrls: Array<[url: string, hostname: string]> = [
    ["https://0x7f000001/hook", "127.0.0.1"],
    ["https://2130706433/hook", "127.0.0.1"],
    ["https://017700000001/hook", "127.0.0.1"],
    ["https://127.1/hook", "127.0.0.1"],
    ["https://0177.0.0.1/hook", "127.0.0.1"],
    ["https://0x7f.0.0.1/hook", "127.0.0.1"],
    ["https://127.0.0.1./hook", "127.0.0.1"],
    ["https://%31%32%37.0.0.1/hook", "127.0.0.1"],
    ["https://0xa9.0xfe.0xa9.0xfe/latest", "169.254.169.254"],
    ["https://[::127.0.0.1]/hook", "[::7f00:1]"],
    ["https://[::a9fe:a9fe]/hook", "[::a9fe:a9fe]"],
    ["https://[0:0:0:0:0:ffff:127.0.0.1]/hook", "[::ffff:7f00:1]"],
    ["https://[64:ff9b:1::7f00:1]/hook", "[64:ff9b:1::7f00:1]"],
    ["https://[64:ff9b::169.254.169.254]/hook", "[64:ff9b::a9fe:a9fe]"],
    ["https://[2002:7f00:1::1]/hook", "[2002:7f00:1::1]"],
    ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook", "[2001:0:4136:e378:8000:63bf:80ff:fffe]"],
  ];
  const noDns = async () => {
    throw new Error("an IP literal must not be resolved");
  };

  it("X-ID-WH-1 other IPv4 notations become dotted decimal before any check, and every form is refused at registration", async () => {
    for (const [url, hostname] of internalUrls) {
      expect(new URL(url).hostname, url).toBe(hostname);
      const verdict = await checkWebhookUrl(url, { policy: guard, requireHttps: true, resolve: noDns });
      expect(verdict, url).toMatchObject({ ok: false, code: "insecure_url" });
    }
  });

  it("X-ID-WH-1 a host name whose DNS answers include such an address is refused at registration", async () => {
    for (const answers of [["::ffff:127.0.0.1"], ["64:ff9b::a9fe:a9fe"], ["93.184.215.14", "::7f00:1"], ["2002:a00:1::1"]]) {
      const verdict = await checkWebhookUrl("https://hooks.example.com/x", {
        policy: guard,
        requireHttps: true,
        resolve: async () => answers,
      });
      expect(verdict, answers.join()).toMatchObject({ ok: false, code: "insecure_url" });
    }
    const publicOnly = await checkWebhookUrl("https://hooks.example.com/x", {
      policy: guard,
      requireHttps: true,
      resolve: async () => ["93.184.215.14", "2606:4700:4700::1111"],
    });
    expect(publicOnly).toEqual({ ok: true });
  });
});

describe("at delivery", () => {
  const receiver = okReceiver();

  async function send(allow: string, host: string) {
    const sender = createSender({ policy: createAddressPolicy(allow), timeoutMs: 2000, connections: 1 });
    try {
      return await sender.send(`http://${host}:${receiver.port}/hook`, {}, Buffer.from("{}"));
    } finally {
      await sender.destroy();
    }
  }

  it("X-ID-WH-1 an IPv4-mapped literal reaches the IPv4 loopback, so it is refused without connecting", async () => {
    // What the guard prevents: with everything allowed, [::ffff:127.0.0.1] is the loopback listener.
    expect(await send("true", "[::ffff:127.0.0.1]")).toMatchObject({ success: true, statusCode: 200 });
    const before = receiver.hits;
    for (const host of [
      "[::ffff:127.0.0.1]",
      "[::127.0.0.1]",
      "[64:ff9b::127.0.0.1]",
      "[64:ff9b:1::7f00:1]",
      "[2002:7f00:1::1]",
      "0x7f000001",
      "127.1",
    ]) {
      expect(await send("false", host), host).toMatchObject({ success: false, error: "blocked_address", statusCode: null });
    }
    expect(receiver.hits).toBe(before);
  });

  it("X-ID-WH-1 a host name resolving to an IPv6 form of an internal IPv4 address is refused in the socket's lookup", async () => {
    const fakeDns = (answers: LookupAddress[]) =>
      ((_host: string, _options: unknown, callback: (err: null, addresses: LookupAddress[]) => void) => callback(null, answers)) as never;
    for (const answers of [
      [{ address: "::ffff:127.0.0.1", family: 6 }],
      [{ address: "64:ff9b::a9fe:a9fe", family: 6 }],
      [
        { address: "93.184.215.14", family: 4 },
        { address: "::7f00:1", family: 6 },
      ],
    ]) {
      const error = await new Promise<unknown>((resolve) =>
        guardedLookup(guard, fakeDns(answers))("hooks.example.com", { all: true }, (err) => resolve(err)),
      );
      expect(error, answers.map((a) => a.address).join()).toBeInstanceOf(BlockedAddressError);
    }
    const ok = await new Promise<unknown>((resolve) =>
      guardedLookup(guard, fakeDns([{ address: "93.184.215.14", family: 4 }]))("hooks.example.com", {}, (err, address) =>
        resolve(err ?? address),
      ),
    );
    expect(ok).toBe("93.184.215.14");
  });
});

describe("WEBHOOK_ALLOW_PRIVATE_TARGETS", () => {
  it("X-ID-WH-1 allowed addresses and CIDRs are allowed in their IPv4-mapped form too; nothing else is", () => {
    const policy = createAddressPolicy("127.0.0.1, 10.0.0.0/8,fd00::/8");
    for (const address of ["127.0.0.1", "::ffff:127.0.0.1", "10.9.8.7", "::ffff:10.9.8.7", "fd00::5", "93.184.215.14"]) {
      expect(policy.refusal(address), address).toBeNull();
    }
    for (const address of ["127.0.0.2", "169.254.169.254", "::ffff:169.254.169.254", "::1", "fe80::1", "::7f00:1", "2002:7f00:1::1"]) {
      expect(policy.refusal(address), address).toEqual(expect.any(String));
    }
  });

  it("X-ID-WH-1 true allows every address; an entry that is not an address is refused at start", () => {
    expect(createAddressPolicy("true").refusal("::ffff:169.254.169.254")).toBeNull();
    expect(() => createAddressPolicy("127.1")).toThrow(/not an IP address/);
  });
});
