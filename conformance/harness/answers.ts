/**
 * What the services said, for failure messages: `expected 400 to be 201` alone does not say why,
 * the problem the service sent with its 400 does. While a conformance test runs, every error answer
 * (4xx, 5xx) it receives is kept with its method, path and status, and, for a JSON body (RFC 9457
 * problem details, an RFC 6749 error), its code, detail and field errors; setup.ts appends the last
 * few to the message of a test that fails.
 *
 * Answers are seen on undici's diagnostics channels, as the contract recorder sees them
 * (contract-recorder.ts): every fetch of the test worker, whatever client made it, without
 * wrapping anything. Only the current test's answers are kept (`resetAnswers` before each test).
 */
import { subscribe } from "node:diagnostics_channel";

/** How many of a test's latest error answers its failure message shows. */
export const SHOWN_ANSWERS = 5;
/** Bytes of a body kept: problems are short; a page that is not one is not shown. */
const BODY_LIMIT = 16 * 1024;

interface Answer {
  method: string;
  path: string;
  status?: number;
  contentType?: string;
  chunks: Buffer[];
  size: number;
}

/** Requests in flight, by undici's request object. */
const inFlight = new Map<object, Answer>();
/** The current test's error answers, in the order their heads arrived (a body may still be arriving, or never be read). */
let answers: Answer[] = [];

/** One line per answer: `POST /api/users → 400 validation_failed: body.email must match format "email"`. */
export function describeAnswer(a: { method: string; path: string; status: number; contentType?: string; body?: string }): string {
  const head = `${a.method.toUpperCase()} ${a.path} → ${a.status}`;
  let json: any;
  try {
    json = a.body && /json/i.test(a.contentType ?? "") ? JSON.parse(a.body) : undefined;
  } catch {
    json = undefined;
  }
  if (!json || typeof json !== "object") {
    // A hosted page says why in its alert.
    const alert = /html/i.test(a.contentType ?? "") ? /<p role="alert">([^<]*)<\/p>/.exec(a.body ?? "")?.[1]?.trim() : undefined;
    if (alert) return `${head} (page): ${alert}`;
    return a.contentType ? `${head} (${a.contentType.split(";")[0]})` : head;
  }
  // RFC 6749 §5.2 and RFC 6750 errors: error, error_description.
  if (typeof json.error === "string") return `${head} ${json.error}${json.error_description ? `: ${json.error_description}` : ""}`;
  const fields = Array.isArray(json.errors)
    ? json.errors.map((e: any) => [e?.field, e?.message].filter(Boolean).join(" ")).filter(Boolean)
    : [];
  const code = json.code ?? json.title ?? "";
  const said = fields.length ? fields.join("; ") : (json.detail ?? "");
  return `${head}${code ? ` ${code}` : ""}${said ? `: ${said}` : ""}`;
}

let subscribed = false;
/** Starts listening (once per worker). */
export function listenForAnswers(): void {
  if (subscribed) return;
  subscribed = true;
  subscribe("undici:request:create", (m: any) => {
    inFlight.set(m.request, { method: String(m.request.method), path: String(m.request.path).split("?")[0]!, chunks: [], size: 0 });
  });
  subscribe("undici:request:headers", (m: any) => {
    const a = inFlight.get(m.request);
    if (!a) return;
    a.status = m.response.statusCode;
    const headers: unknown[] = m.response.headers ?? [];
    for (let i = 0; i + 1 < headers.length; i += 2)
      if (String(headers[i]).toLowerCase() === "content-type") a.contentType = String(headers[i + 1]);
    if (a.status! >= 400) {
      answers.push(a);
      if (answers.length > 50) answers = answers.slice(-SHOWN_ANSWERS);
    }
  });
  subscribe("undici:request:bodyChunkReceived", (m: any) => {
    const a = inFlight.get(m.request);
    if (!a || a.status === undefined || a.status < 400 || a.size >= BODY_LIMIT) return;
    const chunk = Buffer.from(m.chunk);
    a.chunks.push(chunk);
    a.size += chunk.length;
  });
  const done = (m: any) => inFlight.delete(m.request);
  subscribe("undici:request:trailers", done);
  subscribe("undici:request:error", done);
}

/** Forgets the answers so far (before each test). */
export function resetAnswers(): void {
  answers = [];
}

/** The note a failed test's message gets, or "" when it received no error answer. */
export function answersNote(): string {
  if (!answers.length) return "";
  const shown = answers.slice(-SHOWN_ANSWERS).map((a) =>
    describeAnswer({
      method: a.method,
      path: a.path,
      status: a.status!,
      ...(a.contentType ? { contentType: a.contentType } : {}),
      body: Buffer.concat(a.chunks).toString("utf8"),
    }),
  );
  const more = answers.length > shown.length ? ` (the last ${shown.length} of ${answers.length})` : "";
  return `\n\nError answers this test received${more}:\n${shown.map((a) => `  ${a}`).join("\n")}`;
}
