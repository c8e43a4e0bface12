/**
 * The documents' example tokens tell the same story as the examples around them: what a
 * mock hands a front end must not be a token that expired before the data it comes with. Every
 * JWT in an example is decoded: its `exp` follows its `iat` by the lifetime the contract states,
 * an answer that states the expiry (`expiresAt`, `expires_in`) agrees with the token's `exp`, and
 * the examples' other timestamps of the same day fall inside the access tokens' lifetime.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

type Claims = { iat?: number; exp?: number; aud?: string };
const JWT = /^eyJ[\w-]+\.(eyJ[\w-]+)\.[\w-]*$/;

/** Every example value of a document, with the object it sits in. */
function* exampleObjects(node: unknown, inExample = false): Generator<Record<string, unknown>> {
  if (Array.isArray(node)) for (const n of node) yield* exampleObjects(n, inExample);
  else if (node && typeof node === "object") {
    if (inExample) yield node as Record<string, unknown>;
    for (const [k, v] of Object.entries(node)) yield* exampleObjects(v, inExample || k === "example" || k === "value");
  }
}
const claimsOf = (token: string): Claims => JSON.parse(Buffer.from(JWT.exec(token)![1]!, "base64url").toString());

const documents = readdirSync("generated/openapi").filter((f) => f.endsWith(".yaml"));

describe("example tokens and timestamps", () => {
  for (const file of documents) {
    const doc = parse(readFileSync(join("generated/openapi", file), "utf8"));
    const objects = [...exampleObjects(doc.paths)];
    const tokens = objects.flatMap((o) => Object.values(o).filter((v): v is string => typeof v === "string" && JWT.test(v)));
    if (tokens.length === 0) continue;

    it(`${file}: every example JWT was issued before it expires, with the lifetime the contract states`, () => {
      for (const token of tokens) {
        const { iat, exp, aud } = claimsOf(token);
        expect(iat, `iat of a token for ${aud}`).toBeTypeOf("number");
        expect(exp, `exp of a token for ${aud}`).toBeTypeOf("number");
        const lifetime = exp! - iat!;
        // Access and ID tokens 1 hour; repository refresh tokens 30 days, agent tokens 90 days.
        const expected = aud === "repository-refresh" ? 30 * 86400 : aud === "build-agent" ? 90 * 86400 : 3600;
        expect(lifetime, `lifetime of a token for ${aud}`).toBe(expected);
      }
    });

    it(`${file}: an answer that states its token's expiry agrees with the token, and the examples' times fall inside the access token's hour`, () => {
      for (const o of objects) {
        const access = [o.accessToken, o.access_token, o.agentToken].find((v): v is string => typeof v === "string" && JWT.test(v));
        if (!access) continue;
        const { exp } = claimsOf(access);
        if (typeof o.expiresAt === "string") expect(Date.parse(o.expiresAt) / 1000).toBe(exp);
        if (typeof o.expires_in === "number") expect(claimsOf(access).iat! + o.expires_in).toBe(exp);
      }
      const accessTokens = tokens.map(claimsOf).filter((c) => c.exp! - c.iat! === 3600);
      if (accessTokens.length === 0) return;
      const from = Math.min(...accessTokens.map((c) => c.iat!)) * 1000;
      const until = Math.max(...accessTokens.map((c) => c.exp!)) * 1000;
      const day = new Date(from).toISOString().slice(0, 10);
      // Times of the tokens' day at which something happened (records, health answers, deliveries) lie in
      // their hour or before; times to come (`…ExpiresAt`, `nextAttemptAt`, `scheduledAt`) may be later.
      const happened = (key: string) => !/expires|next|scheduled/i.test(key);
      const times = objects
        .flatMap((o) => Object.entries(o))
        .filter(([k, v]) => happened(k) && typeof v === "string" && v.startsWith(`${day}T`))
        .map(([, v]) => v as string);
      for (const t of times) expect(Date.parse(t), t).toBeLessThanOrEqual(until);
      expect(from).toBeLessThan(until);
    });
  }
});
