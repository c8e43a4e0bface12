/**
 * Who the client is behind our proxies (server/http/forwarded.ts): the chain walked from the
 * right, trusted hops skipped, headers from anyone else ignored (X-API-13).
 */
import { describe, expect, it } from "vitest";
import { clientView } from "../../server/http/forwarded.ts";
import { parseTrustProxy } from "../../server/http/trusted-proxy.ts";

const none = parseTrustProxy(undefined);
const lb = parseTrustProxy("10.0.0.0/8, 127.0.0.1");
const view = (peer: string, headers: Record<string, string>, trust = lb, mode: "x-forwarded" | "forwarded" = "x-forwarded") =>
  clientView(peer, false, { host: "svc.internal:3001", ...headers }, trust, mode);

describe("X-API-13 client address, scheme and host behind trusted proxies", () => {
  it("ignores every forwarded header when no proxy is trusted (default)", () => {
    expect(
      view("203.0.113.9", { "x-forwarded-for": "1.2.3.4", "x-forwarded-proto": "https", "x-forwarded-host": "evil.example" }, none),
    ).toEqual({
      ip: "203.0.113.9",
      protocol: "http",
      host: "svc.internal:3001",
    });
  });

  it("ignores a forged X-Forwarded-For from a peer that is not a trusted proxy", () => {
    expect(view("192.0.2.7", { "x-forwarded-for": "10.1.1.1", "x-forwarded-proto": "https" })).toMatchObject({
      ip: "192.0.2.7",
      protocol: "http",
    });
  });

  it("takes the first untrusted hop from the right: a client's own X-Forwarded-For entries stay to the left of it", () => {
    const v = view("10.0.0.2", {
      "x-forwarded-for": "6.6.6.6, 198.51.100.4, 10.0.0.9",
      "x-forwarded-proto": "https",
      "x-forwarded-host": "id.example.com",
    });
    expect(v).toEqual({ ip: "198.51.100.4", protocol: "https", host: "id.example.com" });
  });

  it("a hop count trusts that many nearest hops, whatever their addresses", () => {
    expect(view("172.16.0.1", { "x-forwarded-for": "6.6.6.6, 198.51.100.4, 172.16.0.5" }, parseTrustProxy("2")).ip).toBe("198.51.100.4");
  });

  it("ignores a scheme or host that is not plain http(s) or a host name", () => {
    expect(view("10.0.0.2", { "x-forwarded-for": "198.51.100.4", "x-forwarded-proto": "javascript", "x-forwarded-host": "a b/c" })).toEqual(
      {
        ip: "198.51.100.4",
        protocol: "http",
        host: "svc.internal:3001",
      },
    );
  });

  it("a garbage entry a trusted proxy passed on stops the walk at the last real address", () => {
    expect(view("10.0.0.2", { "x-forwarded-for": "not-an-ip" }).ip).toBe("10.0.0.2");
  });

  it("reads RFC 7239 Forwarded when PROXY_HEADER=forwarded, and ignores X-Forwarded-For then", () => {
    const headers = {
      forwarded: 'for=6.6.6.6;proto=http, for="[2001:db8::17]:4711";proto=https;host=id.example.com, for=10.0.0.9',
      "x-forwarded-for": "9.9.9.9",
    };
    expect(view("10.0.0.2", headers, lb, "forwarded")).toEqual({ ip: "2001:db8::17", protocol: "https", host: "id.example.com" });
    expect(view("10.0.0.2", { forwarded: 'for="198.51.100.4:5000"' }, lb, "forwarded").ip).toBe("198.51.100.4");
  });

  it("believes none of a malformed Forwarded header", () => {
    expect(view("10.0.0.2", { forwarded: "for=;;==" }, lb, "forwarded").ip).toBe("10.0.0.2");
  });

  it("reports IPv4-mapped IPv6 peers as IPv4", () => {
    expect(view("::ffff:10.0.0.2", { "x-forwarded-for": "198.51.100.4" }).ip).toBe("198.51.100.4");
    expect(view("::ffff:192.0.2.1", {}, none).ip).toBe("192.0.2.1");
  });
});
