/**
 * X-API-2, X-API-4, X-API-9: how every service reads a JSON body: nested at most 32 levels
 * (deeper is a clean 400 at any depth and size up to the body limit), UTF-8 only (another charset
 * is 415, bytes that are not UTF-8 are 400), and nothing of a refused body is stored. Checked on
 * the identity, repository and email services, without credentials where the operation needs
 * them: the body is judged before anything else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { platformWorld, repositoryLogin, type PlatformWorld } from "../harness/worlds.ts";
import type { EmailTarget, IdentityTarget, RepositoryTarget } from "../harness/targets.ts";
import { emailApi, identityApi, repositoryApi } from "../harness/api.ts";

let rb: RepositoryTarget;
let id: IdentityTarget;
let em: EmailTarget;
let rbToken: string;
let world: PlatformWorld;
beforeAll(async () => {
  ({ repository: rb, identity: id, email: em } = world = await platformWorld());
  rbToken = await repositoryLogin(rb);
});
afterAll(async () => world?.close());

/** The user's repository names (first 100), through the typed client. */
const repositoryNames = async () =>
  (await repositoryApi(rb, { token: rbToken }).GET("/repository", { params: { query: { pageSize: 100 } } })).data!.items.map((r) => r.name);

interface Target {
  service: string;
  url: () => string;
  path: string;
  /** The operation's body limit in bytes (email's send takes 10 MiB). */
  limit: number;
  /** A field the operation takes, to nest under. */
  field: string;
}
const targets: Target[] = [
  { service: "repository", url: () => rb.url, path: "/auth/login", limit: 65_536, field: "email" },
  { service: "repository", url: () => rb.url, path: "/repository", limit: 65_536, field: "name" },
  { service: "identity", url: () => id.url, path: "/api/users", limit: 65_536, field: "email" },
  { service: "identity", url: () => id.url, path: "/api/applications", limit: 65_536, field: "name" },
  { service: "email", url: () => em.url, path: "/v1/webhooks", limit: 65_536, field: "url" },
  { service: "email", url: () => em.url, path: "/v1/emails", limit: 10 * 1024 * 1024, field: "subject" },
];

/** POST with any bytes and any content type (the harness helper sends strings as UTF-8). */
async function post(url: string, path: string, body: string | Uint8Array, contentType: string, token?: string) {
  const headers: Record<string, string> = { "content-type": contentType };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${url}${path}`, { method: "POST", headers, body });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const expectProblem = (res: { status: number; headers: Headers; body: any; text: string }, status: number, code: string, what: string) => {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).toBe(status);
  expect(res.headers.get("content-type"), what).toMatch(/^application\/problem\+json/);
  expect(res.body, what).toMatchObject({ type: "about:blank", status, code });
};

/** `{"<field>": [[[…]]]}`: `depth` levels in all, the outer object counted. */
const nested = (field: string, depth: number) => `{"${field}":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
const TOO_DEEP = { field: "body", message: "must not nest arrays and objects more than 32 levels deep" };

describe("JSON nesting (X-API-9)", () => {
  it("X-API-9 a JSON body nested deeper than 32 levels is 400 validation_failed on every service, at any depth and size up to the body limit", async () => {
    for (const t of targets) {
      const fill = t.limit - t.field.length - 8; // brackets that fit in the limit with the rest of the body
      for (const body of [
        nested(t.field, 33),
        nested(t.field, 3300), // the shape that once answered 500
        `[${'{"a":['.repeat(2000)}`, // deep and unterminated
        `{"${t.field}":${"[".repeat(Math.floor(fill / 2))}${"]".repeat(Math.floor(fill / 2))}}`, // as deep as the limit allows
        `{"${t.field}":${"[".repeat(fill)}`, // all opening brackets, up to the limit
      ]) {
        const what = `${t.service} ${t.path} ${body.length} bytes`;
        expect(body.length, what).toBeLessThanOrEqual(t.limit);
        const res = await post(t.url(), t.path, body, "application/json");
        expectProblem(res, 400, "validation_failed", what);
        expect(res.body.errors, what).toEqual([TOO_DEEP]);
      }
    }
    for (const health of [() => repositoryApi(rb).GET("/health"), () => identityApi(id).GET("/health"), () => emailApi(em).GET("/health")])
      expect((await health()).response.status).toBe(200);
  });

  it("X-API-9 32 levels are not refused for depth, and brackets inside strings do not count", async () => {
    // At the limit: the ordinary contract check answers (the field is not an array).
    const atLimit = await post(rb.url, "/auth/login", nested("email", 32), "application/json");
    expectProblem(atLimit, 400, "validation_failed", "32 levels");
    expect(atLimit.body.errors).toContainEqual(expect.objectContaining({ field: "body.email" }));
    expect(atLimit.body.errors).not.toContainEqual(TOO_DEEP);
    // Brackets, escaped quotes and backslashes inside a string are text.
    const name = `brackets-${Date.now()}`;
    const description = `${"[{".repeat(100)} \\" ${"[".repeat(100)} \\\\`; // 300 brackets, within the 500 characters
    const created = await repositoryApi(rb, { token: rbToken }).POST("/repository", { body: { name, description } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    expect(created.data!.description).toBe(description);
  });

  it("X-API-7 the NUL check reaches values at the deepest allowed level and names their field", async () => {
    const res = await post(
      rb.url,
      "/repository",
      `{"name":"n","extra":${"[".repeat(31)}"a\\u0000"${"]".repeat(31)}}`,
      "application/json",
      rbToken,
    );
    expectProblem(res, 400, "validation_failed", "NUL at depth 32");
    expect(res.body.errors).toContainEqual({
      field: `body.extra${"[0]".repeat(31)}`,
      message: "must not contain the NUL character (U+0000)",
    });
  });
});

describe("character encoding of JSON bodies", () => {
  const latin1 = (s: string) => Buffer.from(s, "latin1");

  it("X-API-4 a JSON body labelled with a charset other than UTF-8 is 415 on every service", async () => {
    for (const t of targets) {
      for (const [charset, bytes] of [
        ["iso-8859-1", latin1(`{"${t.field}":"caf\u00e9"}`)],
        ["ISO-8859-1", latin1(`{"${t.field}":"caf\u00e9"}`)],
        ["windows-1252", latin1(`{"${t.field}":"caf\u00e9"}`)],
        ["utf-16", Buffer.from(`\ufeff{"${t.field}":"caf\u00e9"}`, "utf16le")],
        ["UTF-16LE", Buffer.from(`{"${t.field}":"caf\u00e9"}`, "utf16le")],
        ['"us-ascii"', latin1(`{"${t.field}":"cafe"}`)],
      ] as const) {
        const what = `${t.service} ${t.path} charset=${charset}`;
        expectProblem(await post(t.url(), t.path, bytes, `application/json; charset=${charset}`), 415, "unsupported_media_type", what);
      }
    }
  });

  it("X-API-4 a latin-1 body is stored neither as it is nor with U+FFFD in its place", async () => {
    const name = `latin1-${Date.now()}`;
    const rbRes = await post(
      rb.url,
      "/repository",
      latin1(JSON.stringify({ name, description: "caf\u00e9" })),
      "application/json; charset=iso-8859-1",
      rbToken,
    );
    expectProblem(rbRes, 415, "unsupported_media_type", "repository");
    const repos = await repositoryNames();
    expect(repos).not.toContain(name);

    const emRes = await post(
      em.url,
      "/v1/api-keys",
      latin1(JSON.stringify({ name: `caf\u00e9 ${name}` })),
      "application/json; charset=iso-8859-1",
      em.apiKey,
    );
    expectProblem(emRes, 415, "unsupported_media_type", "email");
    const keys = (await emailApi(em, { token: em.apiKey }).GET("/v1/api-keys", { params: { query: { pageSize: 100 } } })).data!.items.map(
      (k) => k.name,
    );
    expect(keys.filter((n) => n.endsWith(name))).toEqual([]);
  });

  it("X-API-4 charset utf-8 is accepted in any case, quoted or not", async () => {
    for (const charset of ["utf-8", "UTF-8", '"utf-8"', "utf8"]) {
      const name = `utf8-label-${charset.replace(/\W/g, "")}-${Date.now()}`;
      const res = await post(
        rb.url,
        "/repository",
        JSON.stringify({ name, description: "caf\u00e9 \u{1F600}" }),
        `application/json; charset=${charset}`,
        rbToken,
      );
      expect(res.status, `${charset}: ${res.text}`).toBe(201);
      expect(res.body.description).toBe("caf\u00e9 \u{1F600}");
    }
  });

  it("X-API-2 a JSON body whose bytes are not UTF-8 is 400 malformed_json on every service, and nothing is stored", async () => {
    const invalid = [
      [0xff], // never in UTF-8
      [0xe9], // latin-1 é sent without a label
      [0xc0, 0xaf], // overlong "/"
      [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded as UTF-8
      [0xf0, 0x9f, 0x98], // a truncated 4-byte sequence
    ];
    for (const t of targets) {
      for (const bytes of invalid) {
        const body = Buffer.concat([Buffer.from(`{"${t.field}":"caf`), Buffer.from(bytes), Buffer.from(`-${Date.now()}"}`)]);
        const what = `${t.service} ${t.path} ${Buffer.from(bytes).toString("hex")}`;
        expectProblem(await post(t.url(), t.path, body, "application/json"), 400, "malformed_json", what);
      }
    }
    const name = `not-utf8-${Date.now()}`;
    const stored = await post(
      rb.url,
      "/repository",
      Buffer.concat([Buffer.from(`{"name":"${name}","description":"caf`), Buffer.from([0xe9]), Buffer.from('"}')]),
      "application/json",
      rbToken,
    );
    expectProblem(stored, 400, "malformed_json", "repository with a token");
    const repos = await repositoryNames();
    expect(repos).not.toContain(name);
  });
});
