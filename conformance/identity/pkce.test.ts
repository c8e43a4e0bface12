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
  formFields,
  loginForm,
} from "../harness/oauth-flow.ts";

const world = fileWorld(() => identityWorld({ apps: { app: {}, pub: { clientType: "public" } }, user: true }));

const exchange = (a: TestApp, code: string, verifier: string) =>
  tokenRequest(world.target.url, {
    grant_type: "authorization_code",
    code,
    redirect_uri: a.redirectUri,
    client_id: a.clientId,
    code_verifier: verifier,
    ...(a.clientSecret ? { client_secret: a.clientSecret } : {}),
  });

describe("PKCE", () => {
  it("ID-PKCE-1 a code_verifier outside 43 to 128 characters is rejected (invalid_request), and so is a challenge of that length", async () => {
    const f = await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      email: world.user.email,
      password: world.user.password,
    });
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
      const challenge = createHash("sha256").update(verifier).digest("base64url");
      const b = new Browser(world.target.url);
      const page = await b.get(authorizationPath({ clientId: world.app.clientId, redirectUri: world.app.redirectUri, challenge }));
      const f = formFields(page.text);
      const done = await b.post("/oauth/authorize", loginForm(f, world.user));
      expect((await exchange(world.app, redirectParams(done.location).get("code")!, verifier)).status).toBe(200);
    }
  });

  it("ID-PKCE-2 with S256 the challenge is base64url(SHA-256(verifier)) without padding; with plain, the verifier itself", async () => {
    const s256 = await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      email: world.user.email,
      password: world.user.password,
      method: "S256",
    });
    // The plain verifier is not accepted for an S256 challenge (and vice versa).
    const wrongForm = await exchange(world.app, s256.code, createHash("sha256").update(s256.verifier).digest("base64url"));
    expect(wrongForm.json.error).toBe("invalid_grant");
    expect((await exchange(world.app, s256.code, s256.verifier)).status).toBe(200);
    const plain = await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: world.app.redirectUri,
      email: world.user.email,
      password: world.user.password,
      method: "plain",
    });
    // One character off (a different one: the random verifier may itself end in "A").
    const offByOne = `${plain.verifier.slice(0, -1)}${plain.verifier.endsWith("A") ? "B" : "A"}`;
    expect((await exchange(world.app, plain.code, offByOne)).json.error).toBe("invalid_grant");
    expect((await exchange(world.app, plain.code, plain.verifier)).status).toBe(200);
  });

  it("ID-PKCE-3 PKCE is required for public clients: no code_challenge is invalid_request", async () => {
    const res = await new Browser(world.target.url).get(
      authorizationPath({ clientId: world.pub.clientId, redirectUri: world.pub.redirectUri, state: "st" }),
    );
    expect(res.status).toBe(302);
    const p = redirectParams(res.location);
    expect(p.get("error")).toBe("invalid_request");
    expect(p.get("state")).toBe("st");
    const f = await authorizeWithPassword(world.target.url, {
      clientId: world.pub.clientId,
      redirectUri: world.pub.redirectUri,
      email: world.user.email,
      password: world.user.password,
    });
    expect((await exchange(world.pub, f.code, f.verifier)).status).toBe(200);
  });
});
