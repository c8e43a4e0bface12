/**
 * The repository API as a resource server of the identity service (X-RB-14, X-RB-15, X-RB-16), and
 * what a deployment without that setting says (X-RB-13). A real identity service runs in-process and
 * issues the tokens: by the hosted code flow with PKCE (driven by oauth4webapi, an independent client),
 * or minted by its own token code for the claims a flow cannot choose. The repository services are
 * configured for it, so the file needs in-process targets.
 */
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import * as oauth from "oauth4webapi";
import { generateKeyPair, SignJWT } from "jose";
import { bearer, repositoryApi } from "../harness/api.ts";
import { createApp, createUser, userToken, type TestApp } from "../harness/identity-fixtures.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { authorizeWithPassword } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { identityTarget, repositoryTarget, type IdentityTarget, type RepositoryTarget } from "../harness/targets.ts";
import { rotateKey } from "../../server/keys/rotation.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { identityKeyPurposes } from "../../handlers/identity/signing-keys.ts";

/** The scope the trusted repository requires here: one the identity service's code flow can grant today. */
const SCOPE = "profile";

let identity: IdentityTarget;
let app: TestApp;
/** Trusts `identity` for tokens of `app` (aud = its client id) with SCOPE. */
let trusting: RepositoryTarget;
/** The default: trusts no issuer. */
let plain: RepositoryTarget;
const inProcess = () => !process.env.CONFORMANCE_REPOSITORY_URL && !process.env.CONFORMANCE_IDENTITY_URL;

beforeAll(async () => {
  if (!inProcess()) return;
  identity = await identityTarget();
  app = await createApp(identity, { allowedScopes: ["openid", "profile", "email", "offline_access"] });
  [trusting, plain] = await Promise.all([
    repositoryTarget({
      env: { REPOSITORY_TRUSTED_ISSUER: identity.url, REPOSITORY_TRUSTED_AUDIENCE: app.clientId, REPOSITORY_TRUSTED_SCOPE: SCOPE },
    }),
    repositoryTarget(),
  ]);
});
afterAll(async () => {
  await Promise.all([trusting?.close(), plain?.close(), identity?.close()]);
});

/** The file needs its own configuration of both services. */
const needsOwnServices = (ctx: TestContext) => {
  if (!inProcess()) skipOnDeployment(ctx, NEEDS.configuration);
};

/** An access token of a fresh identity user for `app`, as the token endpoint issues it, with `scopes`. */
async function freshToken(scopes = [SCOPE], clientId = app.clientId) {
  const user = await createUser(identity);
  return { userId: user.id, token: await userToken(identity, user.id, { clientId, scopes }) };
}

const me = (target: RepositoryTarget, token: string) => repositoryApi(target).GET("/auth/me", bearer(token));

/** A raw call, for the tokens the test expects refused. */
const refused = async (target: RepositoryTarget, token: string, path = "/repository", method = "GET") => {
  const res = await request(target.url, method, path, { token });
  expect(res.status, res.text).toBe(401);
  expect(res.body).toMatchObject({ status: 401, code: "invalid_token" });
  expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="repository", error="invalid_token", error_description="/);
  return res.body.detail as string;
};

describe("X-RB-14 the trusted issuer's access tokens", () => {
  it("X-RB-14 an access token from identity's code flow with PKCE (oauth4webapi: discovery, callback, code exchange, resource request) is accepted on /auth/me and /repository", async (ctx) => {
    needsOwnServices(ctx);
    const insecure = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(identity.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const client: oauth.Client = { client_id: app.clientId };
    const person = await createUser(identity);
    const flow = await authorizeWithPassword(identity.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: person.email,
      password: person.password,
      scope: SCOPE,
    });
    const callback = oauth.validateAuthResponse(as, client, new URL(flow.location), flow.state ?? oauth.expectNoState);
    const answer = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretPost(app.clientSecret!),
      callback,
      app.redirectUri,
      flow.verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, answer);
    expect(decodeJwt(tokens.access_token).header.typ).toBe("at+jwt");

    const who = await oauth.protectedResourceRequest(
      tokens.access_token,
      "GET",
      new URL(`${trusting.url}/auth/me`),
      undefined,
      undefined,
      insecure,
    );
    expect(who.status).toBe(200);
    const user = (await who.json()) as { id: string; email: string };
    expect(user.email).toBe(`${user.id}@external.invalid`);

    const api = repositoryApi(trusting, { token: tokens.access_token });
    const created = await api.POST("/repository", { body: { name: "from-identity" } });
    expect(created.response.status).toBe(201);
    const listed = await api.GET("/repository");
    expect(listed.response.status).toBe(200);
    expect(listed.data!.items.map((r) => r.name)).toEqual(["from-identity"]);
  });

  it("X-RB-14 a token of the trusted issuer that fails a check is 401 invalid_token naming it: another audience, the scope missing, typ not at+jwt (an ID token), a sub over 255 characters, a signature by another key, alg none", async (ctx) => {
    needsOwnServices(ctx);
    const other = await createApp(identity);
    const { token: otherAudience } = await freshToken([SCOPE], other.clientId);
    expect(await refused(trusting, otherAudience)).toMatch(/not issued for this API \(aud claim\)/);

    const { token: noScope } = await freshToken(["openid", "email"]);
    expect(await refused(trusting, noScope)).toMatch(/does not carry the scope `profile`/);

    // A JWT the issuer signs with typ JWT (as its ID tokens), with every claim an access token for us has.
    const { userId } = await freshToken();
    const now = Math.floor(identity.clock!.now().getTime() / 1000);
    const idShaped = await identity.service!.ctx.accessTokens.sign("JWT", {
      iss: identity.url,
      sub: userId,
      aud: app.clientId,
      iat: now,
      exp: now + 300,
      scope: SCOPE,
    });
    expect(await refused(trusting, idShaped)).toMatch(/typ must be at\+jwt/);
    // Signed by the issuer, but a `sub` longer than OpenID Connect allows: refused, never stored.
    const longSub = await identity.service!.ctx.accessTokens.sign("at+jwt", {
      iss: identity.url,
      sub: "s".repeat(256),
      aud: app.clientId,
      iat: now,
      exp: now + 300,
      scope: SCOPE,
    });
    expect(await refused(trusting, longSub)).toMatch(/sub claim is longer than 255/);

    // The issuer's claims, typ and a kid of its own, but another key's signature.
    const { token: good } = await freshToken();
    const claims = decodeJwt(good);
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT(claims.payload)
      .setProtectedHeader({ alg: "ES256", kid: claims.header.kid, typ: "at+jwt" })
      .sign(privateKey);
    expect(await refused(trusting, forged)).toMatch(/malformed or its signature is invalid/);
    const unknownKid = await new SignJWT(claims.payload)
      .setProtectedHeader({ alg: "ES256", kid: "not-a-kid", typ: "at+jwt" })
      .sign(privateKey);
    expect(await refused(trusting, unknownKid)).toMatch(/malformed or its signature is invalid/);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const none = `${b64({ alg: "none", typ: "at+jwt" })}.${b64(claims.payload)}.`;
    expect(await refused(trusting, none)).toMatch(/malformed or its signature is invalid/);

    // The good one still works: nothing above broke the cached key set.
    expect((await me(trusting, good)).response.status).toBe(200);
  });

  it("X-RB-14 an issuer whose keys cannot be fetched: its tokens are 401 invalid_token saying so, never a 500", async (ctx) => {
    needsOwnServices(ctx);
    // A loopback port nothing listens on (the identity target's own, once closed, would do as well).
    const gone = "http://127.0.0.1:9";
    const unreachable = await repositoryTarget({ env: { REPOSITORY_TRUSTED_ISSUER: gone, REPOSITORY_TRUSTED_AUDIENCE: "repository" } });
    try {
      const { privateKey } = await generateKeyPair("ES256");
      const token = await new SignJWT({ scope: "repository" })
        .setProtectedHeader({ alg: "ES256", kid: "k", typ: "at+jwt" })
        .setIssuer(gone)
        .setAudience("repository")
        .setSubject("someone")
        .setExpirationTime("1h")
        .sign(privateKey);
      expect(await refused(unreachable, token)).toMatch(/keys could not be fetched/);
      // Its own tokens are not affected.
      const login = await repositoryApi(unreachable).POST("/auth/login", { body: unreachable.user });
      expect((await me(unreachable, login.data!.accessToken)).response.status).toBe(200);
    } finally {
      await unreachable.close();
    }
  });
});

describe("X-RB-15 one repository user per iss and sub", () => {
  it("X-RB-15 the first token of a subject creates its user; later tokens of that subject are the same user; two subjects are two users", async (ctx) => {
    needsOwnServices(ctx);
    const first = await freshToken();
    const again = await userToken(identity, first.userId, { clientId: app.clientId, scopes: [SCOPE, "email"] });
    const a = (await me(trusting, first.token)).data!;
    const b = (await me(trusting, again)).data!;
    expect(b.id).toBe(a.id);
    const second = await freshToken();
    expect((await me(trusting, second.token)).data!.id).not.toBe(a.id);
    // A repository created with one token is listed with the other.
    await repositoryApi(trusting, { token: first.token }).POST("/repository", { body: { name: "shared" } });
    expect((await repositoryApi(trusting, { token: again }).GET("/repository")).data!.items.map((r) => r.name)).toEqual(["shared"]);
  });

  it("X-RB-15 concurrent first requests of one subject create exactly one user and one link", async (ctx) => {
    needsOwnServices(ctx);
    const { token, userId } = await freshToken();
    const answers = await Promise.all(Array.from({ length: 12 }, () => me(trusting, token)));
    const ids = new Set(answers.map((r) => (expect(r.response.status).toBe(200), r.data!.id)));
    expect(ids.size).toBe(1);
    const db = trusting.service!.db;
    const links = await db("external_accounts").where({ issuer: identity.url, subject: userId });
    expect(links).toHaveLength(1);
    expect(await db("users").where({ id: links[0].user_id })).toHaveLength(1);
    // No candidate user of a call that lost the link was kept.
    const orphans = await db("users")
      .where("email", "like", "%@external.invalid")
      .whereNotIn("id", db("external_accounts").select("user_id"));
    expect(orphans).toEqual([]);
  });

  it("X-RB-15 the user has no password: POST /auth/login with its address is 401 invalid_credentials", async (ctx) => {
    needsOwnServices(ctx);
    const { token } = await freshToken();
    const user = (await me(trusting, token)).data!;
    const res = await repositoryApi(trusting).POST("/auth/login", { body: { email: user.email, password: "external" } });
    expect(res.response.status).toBe(401);
    expect(res.error).toMatchObject({ code: "invalid_credentials" });
  });
});

describe("X-RB-16 build agents keep their own tokens", () => {
  it("X-RB-16 an identity access token is refused on the agent operations; an agent the identity user registers polls with its agent token", async (ctx) => {
    needsOwnServices(ctx);
    const { token } = await freshToken();
    expect(await refused(trusting, token, "/buildagent/poll", "POST")).toMatch(/not an agent token of this service/);
    const registered = await repositoryApi(trusting, { token }).POST("/buildagent/register", { body: { name: "ci-1" } });
    expect(registered.response.status).toBe(201);
    const poll = await repositoryApi(trusting).POST("/buildagent/poll", bearer(registered.data!.agentToken));
    expect(poll.response.status).toBe(204);
    // And the agent token is no user token.
    expect(await refused(trusting, registered.data!.agentToken)).toMatch(/.+/);
  });
});

describe("X-RB-13 without a trusted issuer", () => {
  it("X-RB-13 without the setting an identity access token is 401 invalid_token whose error_description says its issuer is not trusted", async (ctx) => {
    needsOwnServices(ctx);
    const { token } = await freshToken();
    const res = await request(plain.url, "GET", "/repository", { token });
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/issuer is not trusted here/);
    expect(res.headers.get("www-authenticate")).toMatch(/error="invalid_token", error_description="[^"]*issuer is not trusted here/);
    // The trusting deployment says the same of a third issuer's token.
    const { privateKey } = await generateKeyPair("ES256");
    const third = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: "ES256", kid: "x", typ: "at+jwt" })
      .setIssuer("https://id.other.example")
      .setAudience(app.clientId)
      .setSubject("s")
      .setExpirationTime("1h")
      .sign(privateKey);
    expect(await refused(trusting, third)).toMatch(/issuer is not trusted here/);
  });
});

describe("X-RB-14 time and keys (these move the clocks: last)", () => {
  it("X-RB-14 identity rotates its keys: a token signed by the new key is accepted (the JWKS is fetched again for the unknown kid)", async (ctx) => {
    needsOwnServices(ctx);
    const before = await freshToken();
    expect((await me(trusting, before.token)).response.status).toBe(200);
    const oldKid = decodeJwt(before.token).header.kid;
    const rotation = await rotateKey({
      db: identity.service!.db,
      purpose: identityKeyPurposes()[0]!,
      now: identity.clock!.now(),
      delaySeconds: 600,
      encryption: keyEncryption(),
    });
    // Past the activation delay and the key ring's refresh on identity's clock. The repository's clock
    // moves only past its JWKS cooldown (30 s), well within the cache's age (10 minutes): only the
    // unknown kid makes it fetch the JWKS again.
    identity.clock!.advance(700_000);
    trusting.clock!.advance(31_000);
    const after = await freshToken();
    expect(decodeJwt(after.token).header.kid).toBe(rotation.kid);
    expect(rotation.kid).not.toBe(oldKid);
    expect((await me(trusting, after.token)).response.status).toBe(200);
    expect((await me(trusting, before.token)).response.status).toBe(200);
  });

  it("X-RB-14 an expired token of the trusted issuer is 401 invalid_token 'expired' (the repository's clock decides)", async (ctx) => {
    needsOwnServices(ctx);
    const { token } = await freshToken();
    expect((await me(trusting, token)).response.status).toBe(200);
    // To one second past its exp, whatever the two clocks did before.
    const exp = Number(decodeJwt(token).payload.exp);
    trusting.clock!.advance(exp * 1000 + 1000 - trusting.clock!.now().getTime());
    expect(await refused(trusting, token, "/auth/me")).toBe("The access token expired.");
  });
});
