/**
 * The errors every operation declares, checked on every operation the documents list (read from
 * generated/openapi/, so an operation added later is checked with no new test): each answer in a
 * status and content type its document declares for it.
 *
 * - X-API-7 400: a NUL character in a query parameter, refused before credentials are looked at;
 * - X-API-5 413: a body one byte over the operation's limit (64 KiB unless it says otherwise),
 *   on the operations that take a request body (only those declare it);
 * - X-API-4 415: a JSON body labelled with a charset other than UTF-8, on the same operations;
 * - X-API-16: an operation without a request body declares neither, and a body sent to it anyway
 *   (too large, in another charset) is not read: the answer is the one it gives without a body;
 * - 401 (RB-5, EM-2, ID-WH-8 by service; X-API-11 for /metrics): no credentials, on operations that need them (and
 *   `/metrics` when METRICS_TOKEN is set, as the suite sets it in-process);
 * - X-API-3 404: a request valid in every other way (the document's own examples) naming a
 *   resource that does not exist, with credentials that may see it;
 * - X-EM-2, X-ID-ADM-1 403: a valid request with credentials of too little power (a
 *   `sending_access` API key; a dashboard token of a user who administers no organization).
 *
 * The first four need no credentials, so they run against a deployment too.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contractDocuments, declaredStatus, documentsOfService, mediaType, resolveRef } from "../../support/contract/documents.ts";
import { emailTarget, identityTarget, repositoryTarget, uniqueEmail } from "../harness/targets.ts";
import { emailApi, expectStatus, identityApi, repositoryApi } from "../harness/api.ts";
import { repositoryLogin } from "../harness/worlds.ts";
import { registerUser, userToken, createApplication, adminToken } from "../harness/identity-fixtures.ts";
import { DASHBOARD_CLIENT_ID } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const METRICS_TOKEN = randomBytes(24).toString("hex");
const DEFAULT_BODY_LIMIT = 64 * 1024;
/** Operations whose documents give a larger body limit (email's send: 10 MiB, X-EM-2). */
const BODY_LIMITS: Record<string, number> = { "email sendEmail": 10 * 1024 * 1024 };
/** Methods whose bodies the services read, where the operation takes one (fetch cannot send a GET or HEAD body). */
const READS_BODIES = new Set(["post", "put", "patch"]);
const takesBody = (op: Op) => Boolean(op.requestBody) && READS_BODIES.has(op.method);

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
  schema?: { type?: string; format?: string; example?: unknown; enum?: unknown[] };
}

interface Op {
  parameters: Parameter[];
  document: string;
  operationId: string;
  method: string;
  path: string;
  responses: Record<string, { content?: Record<string, unknown> }>;
  security?: Array<Record<string, string[]>>;
  requestBody?: { content?: Record<string, unknown> };
}

const docs = contractDocuments();
function operationsOf(service: string): Op[] {
  return documentsOfService(docs, service).flatMap((doc) =>
    Object.entries<any>(doc.definition.paths ?? {}).flatMap(([path, item]) =>
      ["get", "put", "post", "delete", "patch"]
        .filter((method) => item[method]?.operationId)
        .map((method) => {
          const op = item[method];
          const responses = Object.fromEntries(
            Object.entries<any>(op.responses ?? {}).map(([status, r]) => [
              status,
              r.$ref ? doc.definition.components.responses[r.$ref.split("/").pop()] : r,
            ]),
          );
          const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => {
            const parameter = resolveRef(doc.definition, p);
            return { ...parameter, schema: resolveRef(doc.definition, parameter.schema) };
          });
          return {
            document: doc.name,
            operationId: op.operationId,
            method,
            path,
            parameters,
            responses,
            security: op.security ?? doc.definition.security,
            requestBody: op.requestBody,
          };
        }),
    ),
  );
}

/** The path with every parameter filled (a UUID routes to any of them; these refusals come before parameters are read). */
const concretePath = (op: Op) => op.path.replace(/\{[^}]+\}/g, () => randomUUID());

/** Whether an answer is one the operation declares: the status, and a content type declared for it. */
function mismatch(op: Op, expected: number, res: Response, text: string): string | undefined {
  const declared = declaredStatus(Object.keys(op.responses), res.status);
  const types = Object.keys(op.responses[declared ?? ""]?.content ?? {}).map(mediaType);
  const type = mediaType(res.headers.get("content-type"));
  if (res.status !== expected)
    return `${op.operationId} (${op.method.toUpperCase()} ${op.path}): ${res.status} instead of ${expected}: ${text.slice(0, 160)}`;
  if (types.length ? !types.includes(type) : text.length > 0)
    return `${op.operationId}: ${expected} in ${type || "no content type"}, declared ${types.join(", ") || "no body"}`;
  return undefined;
}

/** A value of the parameter's schema naming nothing that exists: a fresh UUID or address, else the documented example. */
function freshValue(p: Parameter): string {
  const schema = p.schema ?? {};
  if (schema.format === "uuid") return randomUUID();
  if (schema.format === "email") return uniqueEmail("nobody");
  const example = p.example ?? schema.example ?? schema.enum?.[0];
  return example === undefined ? randomUUID() : String(example);
}

/** A request the operation's contract accepts, built from its documented examples, naming resources that do not exist. */
function validRequest(op: Op, token: string): { path: string; init: RequestInit } {
  let path = op.path;
  const query = new URLSearchParams();
  for (const p of op.parameters) {
    if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(freshValue(p)));
    else if (p.in === "query" && p.required) query.set(p.name, freshValue(p));
  }
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  let body: string | undefined;
  const json = (
    op.requestBody?.content as Record<string, { examples?: Record<string, { value: unknown }>; example?: unknown }> | undefined
  )?.["application/json"];
  if (json) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(Object.values(json.examples ?? {})[0]?.value ?? json.example ?? {});
  }
  return { path: `${path}${query.size ? `?${query}` : ""}`, init: { method: op.method.toUpperCase(), headers, body, redirect: "manual" } };
}

const needsCredentials = (op: Op) =>
  Boolean(op.security?.length) && op.security!.every((alternative) => Object.keys(alternative).length > 0);

interface Service {
  name: string;
  url: string;
  /** Credentials by security scheme that may see any resource (for 404s). */
  tokens: Record<string, string>;
  /** Credentials by security scheme of too little power (for 403s), where the service has such. */
  weakTokens: Record<string, string>;
  /** Whether /metrics needs METRICS_TOKEN here (in-process: the suite sets it). */
  metricsToken: boolean;
  close(): Promise<void>;
}
const services: Service[] = [];
beforeAll(async () => {
  const env = { METRICS_TOKEN };
  const [rb, id, em] = await Promise.all([repositoryTarget({ env }), identityTarget({ env }), emailTarget({ env })]);
  services.push(
    { name: "repository", url: rb.url, tokens: {}, weakTokens: {}, metricsToken: Boolean(rb.clock), close: () => rb.close() },
    { name: "identity", url: id.url, tokens: {}, weakTokens: {}, metricsToken: Boolean(id.clock), close: () => id.close() },
    {
      name: "email",
      url: em.url,
      tokens: { ApiKeyAuth: em.apiKey },
      weakTokens: {},
      metricsToken: Boolean(em.clock),
      close: () => em.close(),
    },
  );
  // Repository: the user's token, and an agent's.
  const accessToken = await repositoryLogin(rb);
  const agent = await expectStatus(
    repositoryApi(rb, { token: accessToken }).POST("/buildagent/register", { body: { name: `sweep-${randomBytes(3).toString("hex")}` } }),
    201,
    "register agent",
  );
  Object.assign(service("repository").tokens, { UserAuth: accessToken, AgentAuth: agent.agentToken });
  // Email: a sending_access key made with the full one.
  const weak = await expectStatus(
    emailApi(em, { token: em.apiKey }).POST("/v1/api-keys", {
      body: { name: `sweep-${randomBytes(3).toString("hex")}`, permission: "sending_access" },
    }),
    201,
    "create sending_access key",
  );
  service("email").weakTokens.ApiKeyAuth = weak.key;
  // Identity: an organization admin's dashboard token; in-process also a user's who administers nothing.
  const org = await id.createOrganization!();
  const admin = await adminToken(id, org);
  service("identity").tokens.AdminAuth = admin;
  if (id.service) {
    const app = await createApplication(id, admin);
    const user = await registerUser(id, app.clientId);
    service("identity").weakTokens.AdminAuth = await userToken(id, user.id, {
      clientId: DASHBOARD_CLIENT_ID,
      scopes: ["openid", "profile", "email"],
    });
  }
});
afterAll(async () => Promise.all(services.map((s) => s.close())));
const service = (name: string) => services.find((s) => s.name === name)!;

for (const name of ["repository", "identity", "email"]) {
  const ops = operationsOf(name);
  const declaring = (status: string) => ops.filter((op) => op.responses[status]);
  // Hosted forms (a 403 page declared) refuse any post without their CSRF token first, as they must:
  // the sweeps below cannot reach what they declare after it (their own conformance files do).
  const hostedForm = (op: Op) => op.method === "post" && Object.keys(op.responses["403"]?.content ?? {}).includes("text/html");

  describe(`${name}: the generic errors each operation declares`, () => {
    it(`X-API-7 every ${name} operation that declares 400 answers it to a NUL character in a query parameter`, async () => {
      const wrong: string[] = [];
      for (const op of declaring("400").filter((o) => !hostedForm(o))) {
        const res = await fetch(`${service(name).url}${concretePath(op)}?contract_check=a%00b`, {
          method: op.method.toUpperCase(),
          redirect: "manual",
        });
        const problem = mismatch(op, 400, res, await res.text());
        if (problem) wrong.push(problem);
      }
      expect(wrong).toEqual([]);
    });

    it(`X-API-5 every ${name} operation that reads a body and declares 413 answers it to a body one byte over its limit`, async () => {
      const wrong: string[] = [];
      for (const op of declaring("413").filter(takesBody)) {
        const limit = BODY_LIMITS[`${op.document} ${op.operationId}`] ?? DEFAULT_BODY_LIMIT;
        const body = `{"a":"${"x".repeat(limit - 7)}"}`; // limit + 1 bytes
        const res = await fetch(`${service(name).url}${concretePath(op)}`, {
          method: op.method.toUpperCase(),
          headers: { "content-type": "application/json" },
          body,
          redirect: "manual",
        });
        const problem = mismatch(op, 413, res, await res.text());
        if (problem) wrong.push(problem);
      }
      expect(wrong).toEqual([]);
    });

    it(`X-API-4 every ${name} operation that reads a body and declares 415 answers it to a JSON body in another charset`, async () => {
      const wrong: string[] = [];
      for (const op of declaring("415").filter(takesBody)) {
        const res = await fetch(`${service(name).url}${concretePath(op)}`, {
          method: op.method.toUpperCase(),
          headers: { "content-type": "application/json; charset=iso-8859-1" },
          body: "{}",
          redirect: "manual",
        });
        const problem = mismatch(op, 415, res, await res.text());
        if (problem) wrong.push(problem);
      }
      expect(wrong).toEqual([]);
    });

    it(`X-API-16 no ${name} operation without a request body declares 413 or 415`, () => {
      const declared = ops.filter((op) => !op.requestBody && (op.responses["413"] || op.responses["415"]));
      expect(declared.map((op) => `${op.operationId} (${op.method.toUpperCase()} ${op.path})`)).toEqual([]);
    });

    it(`X-API-16 every ${name} operation without a request body ignores an oversized body in another charset`, async () => {
      const wrong: string[] = [];
      const body = `{"a":"${"x".repeat(DEFAULT_BODY_LIMIT)}"}`;
      for (const op of ops.filter((o) => !o.requestBody && o.method !== "get")) {
        const res = await fetch(`${service(name).url}${concretePath(op)}`, {
          method: op.method.toUpperCase(),
          headers: { "content-type": "application/json; charset=iso-8859-1" },
          body,
          redirect: "manual",
        });
        const text = await res.text();
        if ([413, 415].includes(res.status) || !declaredStatus(Object.keys(op.responses), res.status))
          wrong.push(`${op.operationId} (${op.method.toUpperCase()} ${op.path}): ${res.status} ${text.slice(0, 120)}`);
      }
      expect(wrong).toEqual([]);
    });

    /** The clause each service's 401 rule comes from (the report reads a test's clause from the start of its title). */
    const unauthorizedClause = { repository: "RB-5", email: "EM-2", identity: "ID-WH-8" }[name];
    it(`${unauthorizedClause} X-API-11 every ${name} operation that needs credentials and declares 401 answers it, with a Bearer challenge, to a request without any`, async () => {
      const wrong: string[] = [];
      const metrics = (op: Op) => op.operationId === "metrics" && service(name).metricsToken;
      for (const op of declaring("401").filter((o) => needsCredentials(o) || metrics(o))) {
        const res = await fetch(`${service(name).url}${concretePath(op)}`, { method: op.method.toUpperCase(), redirect: "manual" });
        const problem = mismatch(op, 401, res, await res.text());
        if (problem) wrong.push(problem);
        else if (!/^Bearer\b/.test(res.headers.get("www-authenticate") ?? ""))
          wrong.push(`${op.operationId}: 401 without a Bearer challenge`);
      }
      expect(wrong).toEqual([]);
    });

    it(`X-API-11 ${name}'s /metrics answers 200 in the Prometheus text format to METRICS_TOKEN`, async (ctx) => {
      if (!service(name).metricsToken) return skipOnDeployment(ctx, NEEDS.service);
      const { url } = service(name);
      const options = { token: METRICS_TOKEN };
      // As text: the Prometheus format is checked.
      const { data: text, response: res } = await (name === "repository"
        ? repositoryApi(url, options).GET("/metrics", { parseAs: "text" })
        : name === "identity"
          ? identityApi(url, options).GET("/metrics", { parseAs: "text" })
          : emailApi(url, options).GET("/metrics", { parseAs: "text" }));
      expect(res.status).toBe(200);
      expect(mediaType(res.headers.get("content-type"))).toBe("text/plain");
      expect(text).toMatch(/^# HELP http_requests_total /m);
    });

    /** A token of the scheme an operation's credentials are for (its first alternative) from `tokens`; "" for an open operation. */
    const tokenFor = (op: Op, tokens: Record<string, string>) =>
      needsCredentials(op) ? tokens[Object.keys(op.security?.[0] ?? {})[0] ?? ""] : "";

    it(`X-API-3 every ${name} operation that names a resource in its path and declares 404 answers it when the resource does not exist`, async () => {
      const wrong: string[] = [];
      for (const op of declaring("404").filter((o) => o.path.includes("{") && !hostedForm(o))) {
        const token = tokenFor(op, service(name).tokens);
        if (token === undefined) {
          wrong.push(`${op.operationId}: the sweep has no credentials for ${JSON.stringify(op.security)}`);
          continue;
        }
        const { path, init } = validRequest(op, token);
        const res = await fetch(`${service(name).url}${path}`, init);
        const problem = mismatch(op, 404, res, await res.text());
        if (problem) wrong.push(problem);
      }
      expect(wrong).toEqual([]);
    });

    const weakClause = name === "email" ? "X-EM-2" : "X-ID-ADM-1";
    const weakly = declaring("403").filter(
      (o) => needsCredentials(o) && ["ApiKeyAuth", "AdminAuth"].includes(Object.keys(o.security?.[0] ?? {})[0] ?? ""),
    );
    if (weakly.length) {
      it(`${weakClause} every ${name} operation that needs full powers and declares 403 answers it to credentials of too little power`, async (ctx) => {
        if (name === "identity" && !service(name).weakTokens.AdminAuth) return skipOnDeployment(ctx, NEEDS.service);
        const wrong: string[] = [];
        for (const op of weakly) {
          const { path, init } = validRequest(op, tokenFor(op, service(name).weakTokens)!);
          const res = await fetch(`${service(name).url}${path}`, init);
          const problem = mismatch(op, 403, res, await res.text());
          if (problem) wrong.push(problem);
        }
        expect(wrong).toEqual([]);
      });
    }
  });
}
