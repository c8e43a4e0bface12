/**
 * Our identity service as a benchmark target: the real service (createIdentityService, the same
 * assembly `npm start` runs) on SQLite in a temp folder, or on PostgreSQL when BENCH_DATABASE_URL
 * is set (its `identity` schema is dropped first: give the benchmark a database of its own), with
 * response validation off and the log level of production (BENCH_LOG_LEVEL, default info; the
 * lines go to /dev/null).
 *
 * Codes are minted through the OAuth area's own authorization domain: the user consents once
 * (`complete`), then every `begin` of a signed-in user is the single-sign-on path that issues a code
 * (`issueCode`: 256 random bits, only the hash stored, bound to client, redirect URI, scopes, user
 * and PKCE challenge). That is the authorize flow without HTTP and without a browser.
 *
 * Several instances (bench/token.ts's BENCH_INSTANCES): the first, started with BENCH_REUSE_PORT=1,
 * sets everything up as above and listens with SO_REUSEPORT; each further one is started with
 * BENCH_JOIN (the first's JoinInfo) and runs the same service on the same database (the same
 * SQLite file, or the same PostgreSQL schema, which it leaves as it is) and the same port, so the
 * kernel spreads the client's connections over them. Only the first mints codes: a code is
 * exchanged by whichever instance its connection landed on, through the database they share.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../support/free-port.ts";
import knex from "knex";
import { loadConfig } from "../../app/load-config.ts";
import { systemClock } from "../../server/clock.ts";
import { createLogger } from "../../server/logger.ts";
import { listen } from "../../server/http/listen.ts";
import { createIdentityService } from "../../handlers/identity/service.ts";
import { BENCH_API, BENCH_SCOPE, type BenchServer, type JoinInfo, type MintedCode } from "./protocol.ts";

const REDIRECT_URI = "https://client.example.com/callback";

/** Starts the service; `service` is exposed for in-process profiling of the layers. */
export async function startOurs(): Promise<BenchServer & { service: Awaited<ReturnType<typeof createIdentityService>> }> {
  const joining = process.env.BENCH_JOIN ? (JSON.parse(process.env.BENCH_JOIN) as JoinInfo) : undefined;
  if (joining) return joinOurs(joining);
  const dataDir = mkdtempSync(join(tmpdir(), "bench-token-"));
  const port = await freePort();
  const reusePort = process.env.BENCH_REUSE_PORT === "1";
  const { config, logLevel, databaseUrl } = benchConfig(port, dataDir);
  if (databaseUrl) {
    const admin = knex({ client: "pg", connection: databaseUrl, pool: { min: 0, max: 1 } });
    await admin.raw("DROP SCHEMA IF EXISTS identity CASCADE").finally(() => admin.destroy());
  }
  const service = await createIdentityService(config, systemClock, createLogger(config.LOG_LEVEL));
  const http = await listen(service.app, "127.0.0.1", port, { reusePort });
  const { accounts, oauth } = service.deps;

  // Set-up through the same domain functions the admin API and the bootstrap command use.
  const { organization, user } = await accounts.createOrganizationWithAdmin({
    organizationName: "Bench",
    email: "bench@example.com",
    password: randomBytes(12).toString("base64url"),
    firstName: "Bench",
    lastName: "User",
  });
  const { application, clientSecret } = await accounts.createApplication(organization.id, {
    name: "Bench client",
    clientType: "confidential",
    redirectUris: [REDIRECT_URI],
    allowedScopes: ["openid", "profile", "email", "offline_access"],
    // The client_credentials row (X-ID-CC-1..3): the client acts for itself, for the one API.
    clientCredentials: { enabled: true, scopes: [BENCH_API.scope] },
    resources: [BENCH_API.resource],
  });
  const { session } = await oauth.sessions.start(user.id, undefined);

  /** One code through the authorization domain; the first call records the user's consent. */
  async function mintOne(): Promise<MintedCode> {
    const verifier = randomBytes(32).toString("base64url");
    const query = {
      client_id: application.clientId,
      redirect_uri: REDIRECT_URI,
      response_type: "code",
      scope: BENCH_SCOPE,
      state: randomBytes(8).toString("base64url"),
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    };
    let outcome = await oauth.authorization.begin(query, session);
    if (outcome.kind === "consent") {
      const location = await oauth.authorization.complete(outcome.request, user.id, session.authTime, (appId, uid) =>
        accounts.addApplicationUser(appId, uid),
      );
      outcome = { kind: "redirect", location };
    }
    if (outcome.kind !== "redirect") throw new Error(`authorize did not issue a code: ${outcome.kind}`);
    const code = new URL(outcome.location).searchParams.get("code");
    if (!code) throw new Error(`authorize redirected without a code: ${outcome.location}`);
    return { code, verifier };
  }

  return {
    service,
    url: http.url,
    tokenPath: "/oauth/token",
    client: { clientId: application.clientId, clientSecret: clientSecret!, redirectUri: REDIRECT_URI },
    ...(reusePort ? { join: { port, dataDir } } : {}),
    notes: `createIdentityService on ${databaseUrl ? "PostgreSQL" : "SQLite (WAL, one connection)"}, ES256 JWT access + ID tokens, rotating refresh tokens keyed ${config.IDENTITY_TOKEN_KEYS}, log level ${logLevel}`,
    async mintCodes(count) {
      const codes: MintedCode[] = [await mintOne()];
      while (codes.length < count) codes.push(...(await Promise.all(Array.from({ length: Math.min(100, count - codes.length) }, mintOne))));
      return codes;
    },
    async close() {
      await http.close();
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The service's configuration for the benchmark (the same for every instance). */
function benchConfig(port: number, dataDir: string) {
  const logLevel = process.env.BENCH_LOG_LEVEL ?? "info";
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const config = loadConfig({
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    HOST: "127.0.0.1",
    IDENTITY_PORT: String(port),
    IDENTITY_PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    LOG_LEVEL: logLevel,
    // hashed (the default) or time-ordered: how codes and refresh tokens are keyed (docs/configuration.md, IDENTITY_TOKEN_KEYS).
    ...(process.env.IDENTITY_TOKEN_KEYS ? { IDENTITY_TOKEN_KEYS: process.env.IDENTITY_TOKEN_KEYS } : {}),
  });
  return { config, logLevel, databaseUrl };
}

/** A further instance: the same service on the first's database and port; it mints nothing and leaves the data in place. */
async function joinOurs({ port, dataDir }: JoinInfo) {
  const { config, databaseUrl } = benchConfig(port, dataDir);
  const service = await createIdentityService(config, systemClock, createLogger(config.LOG_LEVEL));
  const http = await listen(service.app, "127.0.0.1", port, { reusePort: true });
  return {
    service,
    url: http.url,
    tokenPath: "/oauth/token",
    client: { clientId: "", clientSecret: "", redirectUri: REDIRECT_URI },
    notes: `a further instance on the same ${databaseUrl ? "PostgreSQL schema" : "SQLite file"} and port`,
    async mintCodes(): Promise<MintedCode[]> {
      throw new Error("only the first instance mints codes");
    },
    async close() {
      await http.close();
      await service.close();
    },
  };
}
