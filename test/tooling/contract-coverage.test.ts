/**
 * The contract coverage gate (scripts/contract-coverage.ts) and the checks behind it
 * (support/contract/validator.ts), on fake coverage sets: the gate must fail when a
 * declared response is neither produced nor reasoned, when an allow-listed response was produced,
 * when an allow-list entry names nothing declared, and when an answer broke its document.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { contractDocuments, declaredResponses, responseKey, type DeclaredResponse } from "../../support/contract/documents.ts";
import { checkRequest, checkResponse, matchOperation, receiverOperations } from "../../support/contract/validator.ts";
import type { Observation } from "../../support/contract/observation.ts";
import { computeCoverage, gateFailures, loadAllowList, mockCoverage, type AllowEntry } from "../../scripts/contract-coverage.ts";

const declared: DeclaredResponse[] = [
  {
    document: "shop",
    operationId: "getItem",
    method: "get",
    path: "/items/{id}",
    status: "200",
    contentType: "application/json",
    examples: ["An item"],
  },
  {
    document: "shop",
    operationId: "getItem",
    method: "get",
    path: "/items/{id}",
    status: "404",
    contentType: "application/problem+json",
    examples: [],
  },
  {
    document: "shop",
    operationId: "getItem",
    method: "get",
    path: "/items/{id}",
    status: "500",
    contentType: "application/problem+json",
    examples: [],
  },
];
const seen = (r: DeclaredResponse, errors: string[] = []): Observation => ({
  kind: "response",
  service: "shop",
  document: r.document,
  operationId: r.operationId,
  method: r.method.toUpperCase(),
  status: r.status,
  contentType: r.contentType,
  errors,
  file: "conformance/shop.test.ts",
  test: "a test",
});
const reason = (r: DeclaredResponse): AllowEntry => ({
  document: r.document,
  operationId: r.operationId,
  status: r.status,
  contentType: r.contentType,
  reason: "no test can make the database fail on purpose",
});
const [ok, notFound, serverError] = declared as [DeclaredResponse, DeclaredResponse, DeclaredResponse];

describe("contract coverage gate", () => {
  it("passes when every declared response is produced or reasoned", () => {
    const run = computeCoverage("sqlite", "full", declared, [seen(ok), seen(notFound)], [reason(serverError)]);
    expect(gateFailures(run)).toEqual([]);
    expect(run.documents).toEqual([{ document: "shop", declared: 3, covered: 2, allowListed: 1, uncovered: 0 }]);
  });

  it("fails on a declared response that was never produced and has no reason", () => {
    const run = computeCoverage("sqlite", "full", declared, [seen(ok)], [reason(serverError)]);
    const failures = gateFailures(run);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(responseKey(notFound));
    expect(failures[0]).toContain("no test produced it");
  });

  it("fails on an allow-listed response that a test produced, so the allow-list shrinks", () => {
    const run = computeCoverage("sqlite", "full", declared, [seen(ok), seen(notFound), seen(serverError)], [reason(serverError)]);
    const failures = gateFailures(run);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(`${responseKey(serverError)} is allow-listed but conformance/shop.test.ts > a test produced it`);
  });

  it("fails on an allow-list entry that names no declared response", () => {
    const stale = { ...reason(serverError), status: "503" };
    const run = computeCoverage("sqlite", "full", declared, [seen(ok), seen(notFound)], [reason(serverError), stale]);
    expect(gateFailures(run)).toEqual([
      expect.stringContaining(`allow-list entry "shop getItem 503 application/problem+json" names no declared response`),
    ]);
  });

  it("fails on an answer that broke its document, and does not count it as covered", () => {
    const run = computeCoverage(
      "sqlite",
      "full",
      declared,
      [seen(ok), seen(notFound, ["body must have required property 'code'"])],
      [reason(serverError)],
    );
    const failures = gateFailures(run);
    expect(failures.some((f) => f.includes("broke the document") && f.includes("required property 'code'"))).toBe(true);
    expect(failures.some((f) => f.includes(`${responseKey(notFound)} is declared but no test produced it`))).toBe(true);
  });

  it("a run of some files lists what it did not produce without failing, but still fails on produced allow-list entries; a deployment run fails only on invalid answers", () => {
    expect(gateFailures(computeCoverage("sqlite", "partial", declared, [seen(ok)], [reason(serverError)]))).toEqual([]);
    expect(gateFailures(computeCoverage("sqlite", "partial", declared, [seen(serverError)], [reason(serverError)]))).toHaveLength(1);
    expect(gateFailures(computeCoverage("deployment", "deployment", declared, [seen(serverError)], [reason(serverError)]))).toEqual([]);
    expect(
      gateFailures(computeCoverage("deployment", "deployment", declared, [seen(ok, ["status 500 is not declared"])], [])),
    ).toHaveLength(1);
  });

  it("a webhook receiver's answer counts only when the receiver document declares it", () => {
    const receiver: DeclaredResponse = {
      document: "shop-webhooks",
      operationId: "receive",
      method: "post",
      path: "/",
      status: "204",
      contentType: "",
      examples: [],
    };
    const delivery = (declaredAnswer: boolean): Observation => ({
      ...seen(receiver),
      kind: "webhook",
      declaredAnswer,
      status: declaredAnswer ? "204" : "500",
    });
    expect(computeCoverage("sqlite", "full", [receiver], [delivery(false)], []).uncovered).toHaveLength(1);
    expect(computeCoverage("sqlite", "full", [receiver], [delivery(true)], []).uncovered).toHaveLength(0);
  });

  it("allow-list entries need a reason", () => {
    const dir = mkdtempSync(join(tmpdir(), "allow-"));
    try {
      const file = join(dir, "allow.yaml");
      writeFileSync(file, "- {document: shop, operationId: getItem, status: 500, contentType: application/problem+json, reason: ''}\n");
      expect(() => loadAllowList(file)).toThrow(/reason/);
      writeFileSync(
        file,
        "- {document: shop, operationId: getItem, status: 500, contentType: application/problem+json, reason: no test can break the disk on purpose}\n",
      );
      expect(loadAllowList(file)).toEqual([{ ...reason(serverError), reason: "no test can break the disk on purpose" }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("mock coverage counts each example of each declared response", () => {
    const coverage = mockCoverage(declared, {
      generatedAt: "now",
      obtained: [{ document: "shop", operationId: "getItem", status: "200", contentType: "application/json", example: "An item" }],
    });
    expect(coverage.missing).toEqual(["shop getItem 404 application/problem+json", "shop getItem 500 application/problem+json"]);
  });
});

describe("contract checks against the real documents", () => {
  const docs = contractDocuments();
  const repository = docs.find((d) => d.name === "repository")!;
  const login = matchOperation(repository, "POST", "/auth/login")!;
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const problem = {
    type: "about:blank",
    title: "Too Many Requests",
    status: 429,
    code: "rate_limited",
    detail: "Try again in 60 seconds.",
  };

  it("every document in generated/openapi is read, receivers told apart by name", () => {
    expect(docs.map((d) => d.name)).toEqual(
      expect.arrayContaining(["identity", "identity-webhooks", "repository", "email", "email-webhooks"]),
    );
    expect(
      docs
        .filter((d) => d.receiver)
        .map((d) => d.name)
        .sort(),
    ).toEqual(["email-webhooks", "identity-webhooks"]);
    expect(declaredResponses(docs).length).toBeGreaterThan(100);
  });

  it("a valid answer holds; a missing required header, an undeclared status or content type, or a body off its schema breaks the document", () => {
    expect(login.operationId).toBe("login");
    const headers = { "content-type": "application/problem+json", "retry-after": "60" };
    expect(checkResponse(repository, login, { status: 429, headers, body: json(problem) })).toEqual({
      operationId: "login",
      status: "429",
      contentType: "application/problem+json",
      errors: [],
    });
    expect(
      checkResponse(repository, login, {
        status: 429,
        headers: { "content-type": "application/problem+json" },
        body: json(problem),
      }).errors.join(),
    ).toMatch(/retry-after/);
    expect(checkResponse(repository, login, { status: 429, headers, body: json({ ...problem, code: undefined }) }).errors.join()).toMatch(
      /code/,
    );
    expect(
      checkResponse(repository, login, {
        status: 429,
        headers: { ...headers, "content-type": "text/html" },
        body: Buffer.from("<p>slow down</p>"),
      }).errors.join(),
    ).toMatch(/content type text\/html is not declared/);
    expect(checkResponse(repository, login, { status: 500, headers, body: json({ ...problem, status: 500 }) }).errors.join()).toMatch(
      /status 500 is not declared/,
    );
  });

  it("a delivery our service sends is checked against the receiver document", () => {
    const receiver = docs.find((d) => d.name === "email-webhooks")!;
    const [operation] = receiverOperations(receiver, "POST");
    expect(operation).toBeDefined();
    expect(
      checkRequest(receiver, operation!, { headers: { "content-type": "application/json" }, body: json({ nothing: true }) }).length,
    ).toBeGreaterThan(0);
  });
});
