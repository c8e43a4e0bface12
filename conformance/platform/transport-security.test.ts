/**
 * X-API-17: a service whose public URL is https tells browsers to use https only (HSTS, RFC 6797),
 * on every answer: API answers, errors, hosted pages, probes. A service whose public URL is plain
 * http sends no such header (RFC 6797 §7.2: never over non-secure transport).
 *
 * In-process the suite chooses the public URL (the services still listen on plain http, as they do
 * behind a TLS-terminating proxy); against a deployment it checks what the deployment's own URL says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  emailTarget,
  identityTarget,
  repositoryTarget,
  type EmailTarget,
  type IdentityTarget,
  type RepositoryTarget,
} from "../harness/targets.ts";
import { request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

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

describe("with an https public URL (behind a TLS-terminating proxy)", () => {
  let identity: IdentityTarget;
  let repository: RepositoryTarget;
  let email: EmailTarget;
  beforeAll(async () => {
    if (onDeployment()) return;
    [identity, repository, email] = await Promise.all([
      identityTarget({ env: { IDENTITY_PUBLIC_URL: "https://id.example.com" } }),
      repositoryTarget({ env: { REPOSITORY_PUBLIC_URL: "https://builds.example.com" } }),
      emailTarget({ env: { EMAIL_PUBLIC_URL: "https://mail.example.com" } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([identity?.close(), repository?.close(), email?.close()]);
  });

  it("X-API-17 every answer of every service carries Strict-Transport-Security (2 years, subdomains), errors and pages included", async (ctx) => {
    if (onDeployment()) return skipOnDeployment(ctx, NEEDS.service);
    for (const [service, url] of [
      ["identity", identity.url],
      ["repository", repository.url],
      ["email", email.url],
    ] as const) {
      for (const [method, path] of answersOf(service)) {
        const res = await request(url, method!, path!, method === "POST" ? { json: {} } : {});
        expect(res.headers.get("strict-transport-security"), `${service} ${method} ${path} (${res.status})`).toBe(HSTS);
      }
    }
  });
});

describe("with an http public URL", () => {
  let identity: IdentityTarget;
  let repository: RepositoryTarget;
  let email: EmailTarget;
  beforeAll(async () => {
    [identity, repository, email] = await Promise.all([identityTarget(), repositoryTarget(), emailTarget()]);
  });
  afterAll(async () => {
    await Promise.all([identity?.close(), repository?.close(), email?.close()]);
  });

  it("X-API-17 no answer carries Strict-Transport-Security; a deployment reached over https carries it on every answer", async () => {
    for (const [service, url] of [
      ["identity", identity.url],
      ["repository", repository.url],
      ["email", email.url],
    ] as const) {
      for (const [method, path] of answersOf(service)) {
        const res = await request(url, method!, path!, method === "POST" ? { json: {} } : {});
        // In-process the URL is http; a deployment under test may be reached over either.
        expect(res.headers.get("strict-transport-security"), `${service} ${method} ${path} (${res.status})`).toBe(
          url.startsWith("https:") ? HSTS : null,
        );
      }
    }
  });
});
