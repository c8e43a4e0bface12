/**
 * A request that breaks the contract gets, from the mock, the answer the service gives it: 400
 * `validation_failed` naming each broken field as the service names it (X-MOCK-4), built from
 * Prism's `sl-violations` by the mock's front (scripts/mock-violations.ts), where Prism alone
 * answers the first documented 400 example (`body.email` for any create). Each request goes to
 * the mock and to the real service, and the two answers must be the same.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/free-port.ts";
import { MOCKS, startMock, type RunningMock } from "../../scripts/prism.ts";
import { emailTarget, repositoryTarget, type EmailTarget, type RepositoryTarget } from "../../conformance/harness/targets.ts";
import { contractDocuments } from "../../support/contract/documents.ts";
import { checkResponse, matchOperation } from "../../support/contract/validator.ts";

let repositoryMock: RunningMock;
let emailMock: RunningMock;
let identityMock: RunningMock;
let repository: RepositoryTarget;
let email: EmailTarget;
let accessToken: string;

beforeAll(async () => {
  // One at a time: Prism takes a few seconds of CPU to start, and the machine may be shared.
  repositoryMock = await startMock(MOCKS.repository.file, await freePort(), { quiet: true });
  emailMock = await startMock(MOCKS.email.file, await freePort(), { quiet: true });
  identityMock = await startMock(MOCKS.identity.file, await freePort(), { quiet: true });
  repository = await repositoryTarget();
  email = await emailTarget();
  const login = await fetch(`${repository.url}/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(repository.user),
  });
  accessToken = ((await login.json()) as { accessToken: string }).accessToken;
}, 120_000);
afterAll(async () => {
  await Promise.allSettled([...[repositoryMock, emailMock, identityMock].map((m) => m?.stop()), repository?.close(), email?.close()]);
});

interface Sent {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

async function send(base: string, token: string, r: Sent): Promise<{ status: number; type: string | null; body: any }> {
  const res = await fetch(`${base}${r.path}`, {
    method: r.method,
    headers: { authorization: `Bearer ${token}`, ...(r.body === undefined ? {} : { "content-type": "application/json" }), ...r.headers },
    body: r.body === undefined ? undefined : JSON.stringify(r.body),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type"), body: text ? JSON.parse(text) : null };
}

const docs = contractDocuments();
const doc = (name: string) => docs.find((d) => d.name === name)!;

describe("the mock refuses a request that breaks the contract as the service does", () => {
  const repositoryRequests: Sent[] = [
    { method: "POST", path: "/repository", body: {} },
    { method: "POST", path: "/repository", body: { name: "a b c", notAField: 1 } },
    { method: "GET", path: "/repository?page=0&pageSize=abc" },
    { method: "GET", path: "/repository/not-a-uuid" },
    { method: "POST", path: "/repository", body: { name: "web", defaultBranch: 7, description: ["x"] } },
  ];

  it("X-MOCK-4 repository: the same 400 `validation_failed`, the same fields and messages (body, query, path)", async () => {
    for (const r of repositoryRequests) {
      const what = `${r.method} ${r.path} ${JSON.stringify(r.body ?? "")}`;
      const real = await send(repository.url, accessToken, r);
      const mock = await send(repositoryMock.url, "any-token", r);
      expect(real.status, what).toBe(400);
      expect(mock.status, what).toBe(400);
      expect(mock.type, what).toMatch(/^application\/problem\+json/);
      expect(mock.body, what).toEqual(real.body);
    }
    // The case of the review: `{}` names the missing `name`, not login's `body.email` example.
    const empty = await send(repositoryMock.url, "any-token", repositoryRequests[0]!);
    expect(empty.body.errors).toEqual([{ field: "body.name", message: "is required" }]);
  });

  it("X-MOCK-4 email: a header that breaks the contract is 400 naming `header.idempotency-key`, where Prism alone answers 422", async () => {
    const r: Sent = {
      method: "POST",
      path: "/v1/emails",
      body: { from: "a@example.com", to: ["b@example.com"], subject: "s", text: "t" },
      headers: { "idempotency-key": "a b" },
    };
    const real = await send(email.url, email.apiKey, r);
    const mock = await send(emailMock.url, "any-key", r);
    expect(real.status).toBe(400);
    expect(mock.status).toBe(400);
    expect(mock.body).toEqual(real.body);
  });

  it("X-MOCK-4 the mock's 400 holds to the document's declared 400", async () => {
    const r = repositoryRequests[1]!;
    const res = await fetch(`${repositoryMock.url}${r.path}`, {
      method: r.method,
      headers: { authorization: "Bearer any-token", "content-type": "application/json" },
      body: JSON.stringify(r.body),
    });
    const operation = matchOperation(doc("repository"), r.method, r.path)!;
    const verdict = checkResponse(doc("repository"), operation, {
      status: res.status,
      headers: Object.fromEntries(res.headers),
      body: Buffer.from(await res.arrayBuffer()),
    });
    expect(verdict.errors).toEqual([]);
  });

  it("X-MOCK-4 an operation whose 400 is not a problem (the token endpoint's RFC 6749 error) keeps Prism's documented answer", async () => {
    const res = await fetch(`${identityMock.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=nope",
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toHaveProperty("error");
    expect(body).not.toHaveProperty("code");
  });
});
