/**
 * `npm run mock`: Prism mock servers of every generated document, on the documented ports, for
 * front-end work before (or without) the real services, plus a real identity service seeded with
 * demo data (scripts/mock-identity.ts) to sign in against: Prism answers every operation with its
 * examples but cannot run an OAuth flow. Ctrl-C stops them all.
 *   npm run mock                    all of them
 *   npm run mock -- identity email  some of them (`identity-signin` is the real identity service)
 *   CORS_ORIGINS=http://localhost:5173 npm run mock   pages of these origins (scripts/mock-cors.ts);
 *                                   also the demo client's browser origins on identity-signin
 *   MOCK_PORTS=identity=14001,identity-signin=14101 npm run mock   other ports
 *
 * CORS is answered as the services' contracts state (X-ID-CORS-1, X-RB-10, X-EM-26), not by
 * Prism's allow-everything default. The repository mock takes the tokens the service would
 * (X-MOCK-5): its own example tokens and, when identity-signin runs with it, identity-signin's access
 * tokens for the demo resource (`REPOSITORY_TRUSTED_ISSUER` and its companions name another issuer).
 */
import { existsSync } from "node:fs";
import { readConfig } from "../server/config.ts";
import { repositoryConfig, trustedIssuerOf } from "../handlers/repository/config.ts";
import type { TrustedIssuerSettings } from "../handlers/repository/domain/trusted-issuer.ts";
import { mockCorsPolicy } from "./mock-cors.ts";
import { DEMO, startDemoIdentity } from "./mock-identity.ts";
import { MOCKS, startMock } from "./prism.ts";

/** The real identity service with the demo data: its own port, beside Prism's identity mock (4001). */
const SIGNIN = { name: "identity-signin", port: 4101 } as const;

// The services' own rule for the variable: exact origins, comma-separated.
let origins: string[];
/** The issuer the repository mock trusts when the environment names one, as it would for the service. */
let trustedByEnvironment: TrustedIssuerSettings | undefined;
try {
  const config = readConfig(
    {
      CORS_ORIGINS: process.env.CORS_ORIGINS,
      REPOSITORY_TRUSTED_ISSUER: process.env.REPOSITORY_TRUSTED_ISSUER,
      REPOSITORY_TRUSTED_AUDIENCE: process.env.REPOSITORY_TRUSTED_AUDIENCE,
      REPOSITORY_TRUSTED_SCOPE: process.env.REPOSITORY_TRUSTED_SCOPE,
    },
    [repositoryConfig],
  );
  origins = config.CORS_ORIGINS;
  trustedByEnvironment = trustedIssuerOf(config);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}

const known = [...Object.keys(MOCKS), SIGNIN.name];
const ports = new Map<string, number>();
for (const entry of (process.env.MOCK_PORTS ?? "").split(",").filter(Boolean)) {
  const [name, port] = entry.split("=");
  if (!name || !known.includes(name) || !/^\d{1,5}$/.test(port ?? "") || Number(port) < 1 || Number(port) > 65535) {
    console.error(`MOCK_PORTS: "${entry}" is not <mock>=<port 1-65535>; mocks: ${known.join(", ")}`);
    process.exit(2);
  }
  ports.set(name, Number(port));
}

const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : known;
const unknown = names.filter((n) => !known.includes(n));
if (unknown.length) {
  console.error(`Unknown mock "${unknown.join('", "')}". Known: ${known.join(", ")}`);
  process.exit(2);
}
const running: Array<{ stop(): Promise<void> }> = [];
const stop = async () => {
  await Promise.all(running.map((m) => m.stop()));
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);

// identity-signin first: the repository mock trusts it when both run.
let trusted = trustedByEnvironment;
if (names.includes(SIGNIN.name)) {
  const demo = await startDemoIdentity({ port: ports.get(SIGNIN.name) ?? SIGNIN.port, origins });
  running.push(demo);
  trusted ??= { issuer: demo.url, audience: DEMO.repository.resource, scope: DEMO.repository.scope };
  console.log(
    `${SIGNIN.name.padEnd(18)} real on http://127.0.0.1:${new URL(demo.url).port}  (identity service, temporary SQLite, demo data below)`,
  );
}
// The Prism mocks start at once: each is a process of its own, and starting them one by one only adds up the waits.
const prismNames = names.filter((n): n is keyof typeof MOCKS => n !== SIGNIN.name && existsSync(MOCKS[n as keyof typeof MOCKS].file));
const started = await Promise.allSettled(
  prismNames.map((name) =>
    startMock(MOCKS[name].file, ports.get(name) ?? MOCKS[name].port, {
      quiet: true,
      cors: mockCorsPolicy(name, origins),
      ...(name === "repository" && trusted ? { trustedIssuer: trusted } : {}),
    }),
  ),
);
for (const result of started) if (result.status === "fulfilled") running.push(result.value);
const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
if (failed) {
  console.error(failed.reason instanceof Error ? failed.reason.message : failed.reason);
  await Promise.all(running.map((m) => m.stop()));
  process.exit(1);
}
for (const name of prismNames) {
  const port = ports.get(name) ?? MOCKS[name].port;
  console.log(
    `${name.padEnd(18)} mock on http://127.0.0.1:${port}  (${MOCKS[name].file})` +
      (name === "repository" && trusted ? `; takes ${trusted.issuer}'s access tokens for ${trusted.audience}` : ""),
  );
}
if (names.includes(SIGNIN.name)) {
  const o = origins.length ? origins : DEMO.client.origins;
  console.log(`
Sign in against identity-signin (Authorization Code + PKCE):
  client_id     ${DEMO.client.clientId} (public, no secret), scopes ${DEMO.client.scopes.join(" ")}
  repository    resource=${DEMO.repository.resource} with scope ${DEMO.repository.scope}: a token the repository mock takes
  redirect_uri  /callback or / on http://localhost or http://127.0.0.1, any port
  origins       ${o.join(", ")}${origins.length ? "" : " (set CORS_ORIGINS to change)"}
  user          ${DEMO.user.email} / ${DEMO.user.password}
  admin         ${DEMO.admin.email} / ${DEMO.admin.password} (/dashboard, ${DEMO.organization})
Its data lives in a temporary folder and is gone when this stops.`);
}
console.log("ready");
