/**
 * Checks that the `keycloak` peer does the work bench/token.ts measures it on, before figures are taken
 * from it: starts it (bench/token/keycloak.ts), mints codes through its login form, exchanges each,
 * refreshes each token once, and asks client_credentials tokens; every answer must be 200 with ES256
 * tokens, a reused refresh token must be refused (`invalid_grant`: rotation with revocation on reuse),
 * and the client_credentials token's audience must be the API. Not part of `npm test` (it needs Java,
 * Maven Central on first use, and PostgreSQL):
 *
 *   BENCH_DATABASE_URL=postgres://… node --import tsx bench/token/keycloak-check.ts [codes, default 100]
 */
import { startKeycloak } from "./keycloak.ts";
import { clientCredentialsBodies, codeBodies, mint, refreshBodies, type Server } from "./process.ts";
import { BENCH_API } from "./protocol.ts";

const COUNT = Number(process.argv[2] ?? 100);

interface TokenAnswer {
  status: number;
  json: { access_token?: string; id_token?: string; refresh_token?: string; error?: string; error_description?: string };
}

const payloadOf = (jwt: string, part: 0 | 1) =>
  JSON.parse(Buffer.from(jwt.split(".")[part]!, "base64url").toString()) as Record<string, unknown>;

async function post(server: Server, body: string): Promise<TokenAnswer> {
  const { clientId, clientSecret } = server.client;
  const res = await server.pool.request({
    path: server.tokenPath,
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString("base64")}`,
    },
    body,
  });
  return { status: res.statusCode, json: (await res.body.json()) as TokenAnswer["json"] };
}

async function main(): Promise<void> {
  const started = Date.now();
  const server = await startKeycloak(20);
  try {
    console.log(`keycloak started and configured in ${((Date.now() - started) / 1000).toFixed(0)} s: ${server.notes}`);
    const codes = await mint(server, COUNT);
    const exchanged = await Promise.all(codeBodies(server, codes).map((b) => post(server, b)));
    check("authorization_code", exchanged, ["id_token", "refresh_token"]);
    const firstRefresh = exchanged.map((a) => a.json.refresh_token!);
    const refreshed = await Promise.all(refreshBodies(firstRefresh).map((b) => post(server, b)));
    check("refresh_token", refreshed, ["refresh_token"]);
    // Each first refresh token was used once: a second use is refused.
    const reused = await post(server, refreshBodies([firstRefresh[0]!])[0]!);
    if (reused.status !== 400 || reused.json.error !== "invalid_grant")
      throw new Error(`a reused refresh token: expected 400 invalid_grant, got ${reused.status} ${JSON.stringify(reused.json)}`);
    const cc = await Promise.all(clientCredentialsBodies(Math.min(COUNT, 20)).map((b) => post(server, b)));
    check("client_credentials", cc, []);
    for (const a of cc) {
      const aud = payloadOf(a.json.access_token!, 1).aud;
      if (!(Array.isArray(aud) ? aud : [aud]).includes(BENCH_API.resource))
        throw new Error(`client_credentials: the access token's audience ${JSON.stringify(aud)} is not ${BENCH_API.resource}`);
    }
    console.log(
      `ok: ${COUNT} codes minted through the login form and exchanged, ${COUNT} refreshes, ${cc.length} client_credentials: every answer 200, ` +
        `every token ES256; a reused refresh token refused (${reused.json.error}: ${reused.json.error_description}); ` +
        `client_credentials audience includes ${BENCH_API.resource}`,
    );
  } finally {
    await server.stop();
  }
}

/** Every answer 200 with an ES256 access token, and the other tokens named, ES256 too where they are JWTs. */
function check(label: string, answers: TokenAnswer[], also: Array<"id_token" | "refresh_token">): void {
  answers.forEach((a, i) => {
    const fail = (why: string) => new Error(`${label} #${i}: ${why}: ${a.status} ${JSON.stringify(a.json).slice(0, 300)}`);
    if (a.status !== 200 || !a.json.access_token) throw fail("not a 200 with an access token");
    if (payloadOf(a.json.access_token, 0).alg !== "ES256") throw fail("access token not ES256");
    if (also.includes("id_token") && (!a.json.id_token || payloadOf(a.json.id_token, 0).alg !== "ES256")) throw fail("no ES256 ID token");
    if (also.includes("refresh_token") && !a.json.refresh_token) throw fail("no refresh token");
  });
}

main().catch((err) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
