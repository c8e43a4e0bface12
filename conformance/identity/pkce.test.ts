/** PKCE (RFC 7636): ID-PKCE-1…3. */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { createHash } from "node:crypto";
import type { TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  redirectParams,
  tokenRequest,
  codeExchangeForm,
  formFields,
  loginForm,
} from "../harness/oauth-flow.ts";

const world = fileWorld(() => identityWorld({ apps: { app: {}, pub: { clientType: "public" } }, user: true }));

/** The hosted flow of the world's user at `a`, with PKCE by `method` (S256 unless given): a code and its verifier. */
const signIn = (a: TestApp, method?: "S256" | "plain") =>
  authorizeWithPassword(world.target.url, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    email: world.user.email,
    password: world.user.password,
    ...(method ? { method } : {}),
  });

/** Exchanges `code` at the token endpoint with `verifier` as its code_verifier. */
const exchange = (a: TestApp, code: string, verifier: string) => tokenRequest(world.target.url, codeExchangeForm({ code, verifier }, a));

const sha256 = (text: string) => createHash("sha256").update(text).digest("base64url");

describe("PKCE", () => {
  it("ID-PKCE-1 a code_verifier outside 43 to 128 characters is rejected (invalid_request), and so is a challenge of that length", async () => {
    const f = await signIn(world.app);
    for (const bad of ["a".repeat(42), "a".repeat(129), `${"a".repeat(42)}!`]) {
      const res = await exchange(world.app, f.code, bad);
      expect(res.status).toBe(400);
      expect(res.json.error).toBe("invalid_request");
    }
    expect((await exchange(world.app, f.code, f.verifier)).status).toBe(200);
    for (const challenge of ["a".repeat(42), "a".repeat(129), `${"a".repeat(42)}+`]) {
      const res = await new Browser(world.target.url).get(
        authorizationPath({ clientId: world.app.clientId, redirectUri: world.app.redirectUri, challenge, state: "x" }),
      );
      expect(res.status).toBe(302);
      expect(redirectParams(res.location).get("error")).toBe("invalid_request");
    }
  });

  it("ID-PKCE-1 verifiers of exactly 43 and 128 characters of the unreserved set are accepted", async () => {
    for (const verifier of ["A".repeat(43), `${"a-._~9".repeat(21)}xy`]) {
      const challenge = sha256(verifier);
      const b = new Browser(world.target.url);
      const page = await b.get(authorizationPath({ clientId: world.app.clientId, redirectUri: world.app.redirectUri, challenge }));
      const f = formFields(page.text);
      const done = await b.post("/oauth/authorize", loginForm(f, world.user));
      expect((await exchange(world.app, redirectParams(done.location).get("code")!, verifier)).status).toBe(200);
    }
  });

  it.each([
    // The challenge is no verifier: what a plain client would send is refused for an S256 challenge.
    { method: "S256", rule: "base64url(SHA-256(verifier)), unpadded", wrong: sha256 },
    // One character off (a different one: the random verifier may itself end in "A").
    {
      method: "plain",
      rule: "the verifier itself",
      wrong: (v: string) => `${v.slice(0, -1)}${v.endsWith("A") ? "B" : "A"}`,
    },
  ] as const)(
    "ID-PKCE-2 with $method the challenge is $rule: another verifier is invalid_grant, the verifier exchanges the code",
    async ({ method, wrong }) => {
      const f = await signIn(world.app, method);
      expect((await exchange(world.app, f.code, wrong(f.verifier))).json.error).toBe("invalid_grant");
      expect((await exchange(world.app, f.code, f.verifier)).status).toBe(200);
    },
  );

  it("ID-PKCE-3 PKCE is required for public clients: no code_challenge is invalid_request", async () => {
    const res = await new Browser(world.target.url).get(
      authorizationPath({ clientId: world.pub.clientId, redirectUri: world.pub.redirectUri, state: "st" }),
    );
    expect(res.status).toBe(302);
    const p = redirectParams(res.location);
    expect(p.get("error")).toBe("invalid_request");
    expect(p.get("state")).toBe("st");
    const f = await signIn(world.pub);
    expect((await exchange(world.pub, f.code, f.verifier)).status).toBe(200);
  });
});
