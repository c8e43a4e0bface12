/**
 * The body parser every service uses (server/http/body.ts), on its own: the depth scan's table,
 * form bodies (no conformance operation answers them in problem details: identity's forms answer
 * in RFC 6749 or HTML terms), compressed bodies, and what JSON.parse never sees.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gzipSync } from "node:zlib";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import Koa from "koa";
import { bodyParser, exceedsDepth, MAX_JSON_DEPTH } from "../../server/http/body.ts";
import { problemMiddleware } from "../../server/http/errors.ts";

let server: Server;
let url = "";
beforeAll(async () => {
  const app = new Koa();
  app.use(problemMiddleware());
  app.use(bodyParser({ limitBytes: 4 * 1024 * 1024 }));
  app.use((ctx) => {
    const body = ctx.request.body as object;
    ctx.body = { body, prototype: Object.getPrototypeOf(body) === null ? "null" : "object" };
  });
  server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function post(body: string | Uint8Array, headers: Record<string, string>) {
  const res = await fetch(url, { method: "POST", headers, body });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe("the depth scan (X-API-9)", () => {
  const table: Array<[text: string, deeper: boolean, why: string]> = [
    [`${"[".repeat(32)}${"]".repeat(32)}`, false, "32 levels"],
    [`${"[".repeat(33)}${"]".repeat(33)}`, true, "33 levels"],
    [`{"a":{"b":{"c":[${"{}".repeat(1000)}]}}}`, false, "wide, not deep"],
    [`${"[]".repeat(10_000)}`, false, "many siblings (invalid JSON, left to the parser)"],
    [`{"a":"${"[".repeat(100)}"}`, false, "brackets inside a string"],
    [`{"a":"\\"${"[".repeat(100)}"}`, false, "an escaped quote does not end the string"],
    [`{"a":"\\\\"${"[".repeat(33)}`, true, "an escaped backslash does: what follows is outside"],
    [`{"a":"\\u005b${"[".repeat(40)}"}`, false, "\\u escapes and brackets in a string"],
    [`["${"[".repeat(40)}`, false, "an unterminated string hides the rest (the parser refuses it)"],
    [`${'{"k":'.repeat(33)}1${"}".repeat(33)}`, true, "objects count like arrays"],
    [`${"[".repeat(1_000_000)}`, true, "a million openings"],
  ];
  for (const [text, deeper, why] of table) {
    it(`X-API-9 ${why}: ${deeper ? "deeper than" : "within"} ${MAX_JSON_DEPTH}`, () => {
      expect(exceedsDepth(text, MAX_JSON_DEPTH)).toBe(deeper);
    });
  }

  it("X-API-9 a body of two million levels is refused before JSON.parse, quickly", async () => {
    const started = performance.now();
    const res = await post(`{"a":${"[".repeat(2_000_000)}${"]".repeat(2_000_000)}}`, { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "validation_failed",
      errors: [{ field: "body", message: `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep` }],
    });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("JSON bodies", () => {
  it("X-API-2 a UTF-8 byte order mark is ignored (RFC 8259 §8.1), bytes that are not UTF-8 are 400", async () => {
    const bom = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":"é"}')]), {
      "content-type": "application/json",
    });
    expect(bom).toMatchObject({ status: 200, body: { body: { a: "é" } } });
    const utf16 = await post(Buffer.from('\ufeff{"a":"é"}', "utf16le"), { "content-type": "application/json" });
    expect(utf16).toMatchObject({ status: 400, body: { code: "malformed_json" } });
  });

  it("X-API-2 a __proto__ key and a bare top-level value are malformed_json", async () => {
    for (const text of ['{"__proto__":{"admin":true}}', '{"a":{"__proto__":{}}}', '"text"', "42", "null"]) {
      const res = await post(text, { "content-type": "application/json" });
      expect(res.status, text).toBe(400);
      expect(res.body.code, text).toBe("malformed_json");
    }
  });

  it("an empty JSON body, or a body in another content type, is {} (the router judges it)", async () => {
    expect((await post("", { "content-type": "application/json" })).body.body).toEqual({});
    expect((await post("hello", { "content-type": "text/plain" })).body.body).toEqual({});
  });

  it("X-API-4 a compressed body is read after inflating (the limit counts inflated bytes); an unknown Content-Encoding is 415", async () => {
    const small = await post(gzipSync('{"a":1}'), { "content-type": "application/json", "content-encoding": "gzip" });
    expect(small).toMatchObject({ status: 200, body: { body: { a: 1 } } });
    const bomb = await post(gzipSync(`{"a":"${"x".repeat(8 * 1024 * 1024)}"}`), {
      "content-type": "application/json",
      "content-encoding": "gzip",
    });
    expect(bomb).toMatchObject({ status: 413, body: { code: "payload_too_large" } });
    const unknown = await post('{"a":1}', { "content-type": "application/json", "content-encoding": "compress" });
    expect(unknown).toMatchObject({ status: 415, body: { code: "unsupported_media_type" } });
  });
});

describe("form bodies", () => {
  const form = { "content-type": "application/x-www-form-urlencoded" };

  it("X-API-9 forms are flat: bracketed and dotted names are plain names, repeated names a list, no name is dropped", async () => {
    const res = await post("a[b][c]=1&d.e=2&x=1&x=2&f[]=3&toString=4&__proto__=5&n=caf%C3%A9+au+lait", form);
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({
      "a[b][c]": "1",
      "d.e": "2",
      x: ["1", "2"],
      "f[]": "3",
      toString: "4",
      __proto__: "5",
      n: "café au lait",
    });
    expect(res.body.prototype).toBe("null");
  });

  it("X-API-4 a form labelled with a charset other than UTF-8 is 415; utf-8 in any case is read", async () => {
    for (const charset of ["iso-8859-1", "windows-1252", "UTF-16"]) {
      const res = await post(Buffer.from("n=caf\u00e9", "latin1"), {
        "content-type": `application/x-www-form-urlencoded; charset=${charset}`,
      });
      expect(res, charset).toMatchObject({ status: 415, body: { code: "unsupported_media_type" } });
    }
    const ok = await post("n=caf%C3%A9", { "content-type": "application/x-www-form-urlencoded;charset=UTF-8" });
    expect(ok).toMatchObject({ status: 200, body: { body: { n: "café" } } });
  });

  it("X-API-2 a form whose bytes or percent-escapes are not UTF-8, or with more than 1000 fields, is 400 malformed_body", async () => {
    for (const body of [
      Buffer.from("n=caf\u00e9", "latin1"),
      "n=caf%E9",
      "n=%C0%AF",
      "%FF=1",
      Array.from({ length: 1001 }, (_, i) => `k${i}=1`).join("&"),
    ]) {
      const res = await post(body, form);
      expect(res.status, String(body).slice(0, 40)).toBe(400);
      expect(res.body.code).toBe("malformed_body");
    }
  });
});
