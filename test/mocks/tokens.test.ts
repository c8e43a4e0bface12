/**
 * The repository mock takes the tokens the service would (X-MOCK-5, scripts/mock-tokens.ts): its own
 * example tokens for the operation's token system, the trusted issuer's access tokens verified as the
 * service verifies them (X-RB-14), and refuses any other JWT with the service's 401 (X-RB-13). A page
 * that signs in with identity and calls the repository mock is told what the service would tell it.
 */
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { freePort } from "../../support/free-port.ts";
import { MOCKS, startMock, type RunningMock } from "../../scripts/prism.ts";
import { exampleIssuer } from "../../scripts/mock-tokens.ts";
import { FOREIGN_TOKEN_DETAIL } from "../../handlers/repository/domain/foreign-tokens.ts";

const AUDIENCE = "https://repository.example";
const SCOPE = "repository";

let plain: RunningMock;
let trusting: RunningMock;
let issuer: { url: string; server: Server; key: CryptoKey };

/** A JWT with a placeholder signature, as the documented examples are. */
const unsigned = (claims: Record<string, unknown>, kid = "rb-user-1") =>
  [{ alg: "EdDSA", kid }, claims].map((part) => Buffer.from(JSON.stringify(part)).toString("base64url")).join(".") + ".c2lnbmF0dXJl";

const document = {
  name: "repository",
  file: MOCKS.repository.file,
  receiver: false,
  definition: parse(readFileSync(MOCKS.repository.file, "utf8")),
};
const own = exampleIssuer(document)!;
const ownAccess = unsigned({ iss: own, aud: "repository-api", sub: "3fa85f64-5717-4562-b3fc-2c963f66afa6", exp: 4102444800 });
const ownAgent = unsigned({ iss: own, aud: "build-agent", sub: "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", exp: 4102444800 }, "rb-agent-1");

/** An identity service's discovery document and JWKS, signing with one ES256 key. */
async function startIssuer() {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server = createServer((req, res) => {
    const body =
      req.url === "/.well-known/openid-configuration"
        ? { issuer: url, jwks_uri: `${url}/jwks` }
        : req.url === "/jwks"
          ? { keys: [jwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" }).end(JSON.stringify(body ?? {}));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url, server, key: privateKey };
}

/** An RFC 9068 access token of the issuer. */
const accessToken = (claims: Record<string, unknown> = {}, expiresIn = "5m") =>
  new SignJWT({ scope: `openid ${SCOPE}`, ...claims })
    .setProtectedHeader({ alg: "ES256", kid: "k1", typ: "at+jwt" })
    .setIssuer(issuer.url)
    .setAudience(AUDIENCE)
    .setSubject("user-1")
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(issuer.key);

const call = (mock: RunningMock, path: string, token: string, method = "GET") =>
  fetch(`${mock.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(method === "POST" ? { "content-type": "application/json" } : {}) },
    ...(method === "POST" ? { body: JSON.stringify({}) } : {}),
  });

/** The service's 401 for a refused token: problem+json and the RFC 6750 challenge, with `detail`. */
async function expectRefused(answer: Response, detail: string | RegExp) {
  expect(answer.status).toBe(401);
  expect(answer.headers.get("content-type")).toContain("application/problem+json");
  expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer realm="repository", error="invalid_token"/);
  const body = (await answer.json()) as { detail: string };
  if (typeof detail === "string") expect(body.detail).toBe(detail);
  else expect(body.detail).toMatch(detail);
}

beforeAll(async () => {
  issuer = await startIssuer();
  [plain, trusting] = await Promise.all([
    startMock(MOCKS.repository.file, await freePort(), { quiet: true }),
    startMock(MOCKS.repository.file, await freePort(), {
      quiet: true,
      trustedIssuer: { issuer: issuer.url, audience: AUDIENCE, scope: SCOPE },
    }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([plain?.stop(), trusting?.stop()]);
  issuer?.server.close();
});

describe("X-MOCK-5 the repository mock takes the tokens the service takes", () => {
  it("X-MOCK-5 its own example tokens answer as Prism does, each on its token system's operations", async () => {
    expect((await call(plain, "/auth/me", ownAccess)).status).toBe(200);
    expect((await call(plain, "/buildagent/poll", ownAgent, "POST")).status).not.toBe(401);
  });

  it("X-MOCK-5 a placeholder that is not a JWT still answers, for building screens", async () => {
    expect((await call(plain, "/auth/me", "x")).status).toBe(200);
  });

  it("X-MOCK-5 an access token of another issuer is the service's 401 saying so (X-RB-13)", async () => {
    await expectRefused(await call(plain, "/auth/me", await accessToken()), FOREIGN_TOKEN_DETAIL.access);
    await expectRefused(
      await call(plain, "/repository", unsigned({ iss: "https://elsewhere.example", aud: "repository-api" })),
      FOREIGN_TOKEN_DETAIL.access,
    );
  });

  it("X-MOCK-5 a token of the other system is refused: an agent token on a user operation and the reverse", async () => {
    await expectRefused(await call(plain, "/auth/me", ownAgent), FOREIGN_TOKEN_DETAIL.access);
    await expectRefused(await call(plain, "/buildagent/poll", ownAccess, "POST"), FOREIGN_TOKEN_DETAIL.agent);
  });

  it("X-MOCK-5 with a trusted issuer, its valid access token answers as Prism does (X-RB-14)", async () => {
    expect((await call(trusting, "/auth/me", await accessToken())).status).toBe(200);
    expect((await call(trusting, "/auth/me", ownAccess)).status).toBe(200);
  });

  it("X-MOCK-5 a trusted issuer's token that fails a check is refused with the service's detail", async () => {
    await expectRefused(await call(trusting, "/auth/me", await accessToken({ scope: "openid" })), /does not carry the scope `repository`/);
    await expectRefused(await call(trusting, "/auth/me", await accessToken({}, "-1m")), "The access token expired.");
    const forged = `${(await accessToken()).slice(0, -4)}AAAA`;
    await expectRefused(await call(trusting, "/auth/me", forged), "The access token is malformed or its signature is invalid.");
    // Agents keep their own tokens (X-RB-16).
    await expectRefused(await call(trusting, "/buildagent/poll", await accessToken(), "POST"), FOREIGN_TOKEN_DETAIL.agent);
  });
});
