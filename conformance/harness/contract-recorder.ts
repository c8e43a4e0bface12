/**
 * Contract coverage, recorded while the conformance suite runs: every answer a service gave to the
 * suite, as (document, operationId, status, content type), checked against the document
 * (support/contract/validator.ts), one JSON line per answer (support/contract/observation.ts) in
 * CONTRACT_COVERAGE_DIR (scripts/conformance.ts sets it per run and reads the lines back for
 * contract-coverage.txt/json). Without that variable nothing is recorded.
 *
 * Services: the harness names each service's URL (`observeService`, from targets.ts), in-process
 * or a deployment's alike. Answers are seen through undici's diagnostics channels, which Node's
 * own `fetch` and the undici package (the suite's `fetchFrom`) both publish on, so every request
 * of a test worker to a named origin is seen, whatever client made it, without a proxy that
 * would change the service's address (its issuer). Requests to other origins (a social upstream,
 * webhook receivers) are not service answers and are ignored here.
 *
 * Webhooks: receivers record what they got and what they answered (`observeReceived`): the
 * request our service sent is checked against the receiver document, the answer is the response.
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import type { Server, IncomingMessage, ServerResponse } from "node:http";
import { expect } from "vitest";
import { contractDocuments, documentsOfService, mediaType, type ContractDocument } from "../../support/contract/documents.ts";
import type { Observation } from "../../support/contract/observation.ts";
import { checkRequest, checkResponse, decodeBody, matchOperation, receiverOperations } from "../../support/contract/validator.ts";

const dir = process.env.CONTRACT_COVERAGE_DIR;
const outFile = dir ? join(dir, `observations-${process.pid}-${randomBytes(4).toString("hex")}.jsonl`) : undefined;
let documents: ContractDocument[] | undefined;
const docs = () => (documents ??= contractDocuments());
/** origin → service name */
const origins = new Map<string, string>();

function where(): { file?: string; test?: string } {
  try {
    const state = expect.getState();
    return {
      ...(state.testPath ? { file: state.testPath.replace(/^.*?\/(conformance\/)/, "$1") } : {}),
      ...(state.currentTestName ? { test: state.currentTestName } : {}),
    };
  } catch {
    return {};
  }
}

function write(o: Observation): void {
  if (!outFile) return;
  mkdirSync(dir!, { recursive: true });
  appendFileSync(outFile, `${JSON.stringify({ ...o, ...where() })}\n`);
}

/** undici's flat [name, value, name, value…] (strings or Buffers) → lower-cased header record. */
function headerRecord(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(flat)) {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = String(flat[i]).toLowerCase();
      out[name] = out[name] === undefined ? String(flat[i + 1]) : `${out[name]}, ${String(flat[i + 1])}`;
    }
  }
  return out;
}

interface Pending {
  service: string;
  method: string;
  path: string;
  status?: number;
  headers?: Record<string, string>;
  chunks: Buffer[];
}
const pending = new Map<object, Pending>();

function finish(request: object, note?: string): void {
  const p = pending.get(request);
  pending.delete(request);
  if (!p || p.status === undefined) return;
  const headers = p.headers ?? {};
  const base = { kind: "response" as const, service: p.service, method: p.method.toUpperCase() };
  for (const doc of documentsOfService(docs(), p.service)) {
    const operation = matchOperation(doc, p.method, p.path);
    if (!operation) continue;
    let body: Buffer = Buffer.concat(p.chunks);
    const errors: string[] = [];
    try {
      body = decodeBody(body, headers["content-encoding"]);
    } catch (err) {
      errors.push(`the body does not decode as ${headers["content-encoding"]}: ${(err as Error).message}`);
    }
    // Unread: the test stopped reading before the body ended; status, content type and headers are still checked.
    const verdict = checkResponse(doc, operation, { status: p.status, headers, body }, { bodyUnread: note !== undefined });
    write({
      ...base,
      document: doc.name,
      operationId: verdict.operationId,
      status: verdict.status,
      contentType: verdict.contentType,
      errors: [...errors, ...verdict.errors],
    });
    return;
  }
  write({
    ...base,
    document: null,
    operationId: null,
    path: p.path,
    status: String(p.status),
    contentType: mediaType(headers["content-type"]),
    errors: [],
  });
}

let subscribed = false;
function subscribeOnce(): void {
  if (subscribed || !outFile) return;
  subscribed = true;
  subscribe("undici:request:create", (m: any) => {
    const service = origins.get(String(m.request.origin).replace(/\/$/, ""));
    if (!service) return;
    pending.set(m.request, { service, method: String(m.request.method), path: String(m.request.path).split("?")[0]!, chunks: [] });
  });
  subscribe("undici:request:headers", (m: any) => {
    const p = pending.get(m.request);
    if (!p) return;
    // A new response of the same request object (redirect hops are requests of their own): start over.
    p.status = m.response.statusCode;
    p.headers = headerRecord(m.response.headers);
    p.chunks = [];
  });
  subscribe("undici:request:bodyChunkReceived", (m: any) => {
    const p = pending.get(m.request);
    if (p && p.status !== undefined) p.chunks.push(Buffer.from(m.chunk));
  });
  subscribe("undici:request:trailers", (m: any) => finish(m.request));
  subscribe("undici:request:error", (m: any) => finish(m.request, "aborted"));
  process.on("exit", () => {
    for (const request of [...pending.keys()]) finish(request, "unread");
  });
}

/**
 * Records every answer of the service at `url` from now on (its documents: documentsOfService).
 * Returns what forgets it: once the service's port is closed, another server (a later file's
 * receiver, when a worker runs several files) may listen there, and its answers are no service's.
 */
export function observeService(url: string, service: string): () => void {
  if (!outFile) return () => {};
  const origin = new URL(url).origin;
  origins.set(origin, service);
  subscribeOnce();
  return () => {
    if (origins.get(origin) === service) origins.delete(origin);
  };
}

/** What a test's webhook receiver got and answered. */
export interface ReceivedExchange {
  method: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  status: number;
  responseHeaders?: Record<string, string>;
  responseBody?: Buffer;
}

/**
 * Records a delivery that reached a test's receiver: our request checked against the receiver
 * document (`document`, e.g. `identity-webhooks`), the receiver's answer as the response. The
 * answer counts as a declared response only when the document declares it; a test that plays a
 * misbehaving receiver (a 500, a hang) covers nothing, but our request must still hold.
 */
export function observeReceived(document: string, exchange: ReceivedExchange): void {
  if (!outFile) return;
  const doc = docs().find((d) => d.name === document);
  if (!doc) return; // the document is gone (renamed): nothing to count it against
  const headers = Object.fromEntries(
    Object.entries(exchange.headers)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(", ") : String(v)]),
  );
  const candidates = receiverOperations(doc, exchange.method);
  const checked = candidates.map((operation) => ({ operation, errors: checkRequest(doc, operation, { headers, body: exchange.body }) }));
  const best = checked.find((c) => c.errors.length === 0) ?? checked[0];
  const base = { kind: "webhook" as const, service: document, method: exchange.method.toUpperCase() };
  if (!best) {
    write({
      ...base,
      document,
      operationId: null,
      status: String(exchange.status),
      contentType: "",
      errors: [`no ${exchange.method} operation in ${document}`],
    });
    return;
  }
  const answer = checkResponse(
    doc,
    best.operation,
    { status: exchange.status, headers: exchange.responseHeaders ?? {}, body: exchange.responseBody ?? Buffer.alloc(0) },
    { undeclaredBodyIgnored: true },
  );
  write({
    ...base,
    document,
    operationId: best.operation.operationId!,
    status: answer.status,
    contentType: answer.contentType,
    errors: best.errors,
    declaredAnswer: answer.errors.length === 0,
  });
}

/** The User-Agent of the deliveries our services send (server/webhooks/sender.ts). */
const OUR_DELIVERIES = /^webhook-delivery\//;

/**
 * Records every delivery of ours that `server` (a test's receiver, playing the contract of
 * `document`) gets, with the answer it gives. Requests a test sends to a receiver itself (forged
 * signatures for the reference receiver) are not our service's and are left out.
 */
export function observeReceiver(server: Server, document: string): void {
  if (!outFile) return;
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    if (!OUR_DELIVERIES.test(String(req.headers["user-agent"] ?? ""))) return;
    const body: Buffer[] = [];
    const answer: Buffer[] = [];
    req.on("data", (c: Buffer) => body.push(c));
    const keep = (chunk: unknown) => {
      if (chunk && typeof chunk !== "function") answer.push(Buffer.from(chunk as string));
    };
    // Headers given to writeHead directly never reach getHeaders(): keep them.
    const headed: Record<string, string> = {};
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const given = rest.find((r) => r && typeof r === "object");
      if (given && !Array.isArray(given)) for (const [k, v] of Object.entries(given)) headed[k.toLowerCase()] = String(v);
      return (writeHead as any)(status, ...rest);
    }) as typeof res.writeHead;
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    res.write = ((chunk: unknown, ...rest: unknown[]) => (keep(chunk), (write as any)(chunk, ...rest))) as typeof res.write;
    res.end = ((chunk: unknown, ...rest: unknown[]) => (keep(chunk), (end as any)(chunk, ...rest))) as typeof res.end;
    const record = (status: number) =>
      observeReceived(document, {
        method: req.method ?? "",
        headers: req.headers,
        body: Buffer.concat(body),
        status,
        responseHeaders: {
          ...Object.fromEntries(Object.entries(res.getHeaders()).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v)])),
          ...headed,
        },
        responseBody: Buffer.concat(answer),
      });
    // An answer sent, or none (a receiver that hangs or drops the connection): status 0, not a declared answer.
    let done = false;
    res.on("finish", () => !done && ((done = true), record(res.statusCode)));
    res.on("close", () => !done && ((done = true), record(0)));
  });
}
