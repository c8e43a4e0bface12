/**
 * X-API-17: a service whose public URL is https tells browsers to use https only (HSTS, RFC 6797),
 * on every answer: API answers, errors, hosted pages, probes. A service whose public URL is plain
 * http sends no such header (RFC 6797 §7.2: never over non-secure transport).
 *
 * In-process the suite chooses the public URL (the services still listen on plain http, as they do
 * behind a TLS-terminating proxy); against a deployment it checks what the deployment's own URL says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { fileWorld, platformWorld, type PlatformWorld } from "../harness/worlds.ts";

const HSTS = "max-age=63072000; includeSubDomains";
const onDeployment = () =>
  Boolean(process.env.CONFORMANCE_IDENTITY_URL || process.env.CONFORMANCE_REPOSITORY_URL || process.env.CONFORMANCE_EMAIL_URL);

/** Requests of every kind a service answers: probes, API errors, an unknown path and, per service, a page or a redirect. */
const answersOf = (service: "identity" | "repository" | "email") => [
  ["GET", "/health"],
  ["GET", "/ready"],
  ["GET", "/no-such-path"],
  ...(service === "identity"
    ? [
        ["GET", "/.well-known/openid-configuration"],
        ["GET", "/api/users/me"],
        ["GET", "/oauth/authorize?client_id=nobody"],
        ["POST", "/oauth/token"],
      ]
    : service === "repository"
      ? [
          ["GET", "/repository"],
          ["POST", "/auth/login"],
        ]
      : [
          ["GET", "/v1/emails"],
          ["GET", "/v1/track/click/unknown-token"],
          ["POST", "/v1/emails"],
        ]),
];

/** Every answer of `answersOf` from each service of `world`: what it was, the URL it came from, its Strict-Transport-Security. */
async function everyAnswer(world: PlatformWorld) {
  const answers: Array<{ what: string; url: string; hsts: string | null }> = [];
  for (const [service, { url }] of [
    ["identity", world.identity],
    ["repository", world.repository],
    ["email", world.email],
  ] as const) {
    for (const [method, path] of answersOf(service)) {
      const res = await request(url, method!, path!, method === "POST" ? { json: {} } : {});
      answers.push({ what: `${service} ${method} ${path} (${res.status})`, url, hsts: res.headers.get("strict-transport-security") });
    }
  }
  return answers;
}

describe("with an https public URL (behind a TLS-terminating proxy)", () => {
  let world: PlatformWorld | undefined;
  beforeAll(async () => {
    if (onDeployment()) return;
    world = await platformWorld({
      identity: { IDENTITY_PUBLIC_URL: "https://id.example.com" },
      repository: { REPOSITORY_PUBLIC_URL: "https://builds.example.com" },
      email: { EMAIL_PUBLIC_URL: "https://mail.example.com" },
    });
  });
  afterAll(async () => world?.close());

  it("X-API-17 every answer of every service carries Strict-Transport-Security (2 years, subdomains), errors and pages included", async (ctx) => {
    if (!world) return skipOnDeployment(ctx, NEEDS.service);
    for (const answer of await everyAnswer(world)) expect(answer.hsts, answer.what).toBe(HSTS);
  });
});

describe("with an http public URL", () => {
  const world = fileWorld(() => platformWorld());

  it("X-API-17 no answer carries Strict-Transport-Security; a deployment reached over https carries it on every answer", async () => {
    // In-process the URL is http; a deployment under test may be reached over either.
    for (const answer of await everyAnswer(world)) expect(answer.hsts, answer.what).toBe(answer.url.startsWith("https:") ? HSTS : null);
  });
});
