/**
 * Raw HTTP helpers: the suite talks to services only over HTTP.
 *
 * The rule: a request the contract allows goes through the typed clients (api.ts), so the
 * compiler checks its path, parameters and body against the SDK documents; fixtures and set-up
 * helpers always do. `request` is for what a typed client must refuse to build: bodies the
 * contract forbids (malformed, missing or extra fields, wrong types), wrong content types, bad or
 * missing tokens where the client would add one, raw form posts to the OAuth endpoints, byte-level
 * header checks, paths outside the documents. A test that uses it sends something on purpose.
 */

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function request<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { json?: unknown; token?: string; headers?: Record<string, string>; body?: string; fetch?: typeof fetch } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let body = options.body;
  if (options.json !== undefined) {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(options.json);
  }
  const res = await (options.fetch ?? fetch)(`${baseUrl}${path}`, { method, headers, body, redirect: "manual" });
  const { text, json } = await readBody(res);
  return { status: res.status, headers: res.headers, body: json as T, text };
}

/**
 * An answer's body as the suite reads it: the text, and its JSON when it parses (undefined when the
 * body is empty or not JSON: an HTML page, a problem the test expects to be malformed).
 */
export async function readBody(res: Response): Promise<{ text: string; json: any }> {
  const text = await res.text();
  try {
    return { text, json: text ? JSON.parse(text) : undefined };
  } catch {
    return { text, json: undefined };
  }
}

/** Decodes a JWT's header and payload without verifying (the suite checks claims, the service checks signatures). */
export function decodeJwt(token: string): { header: Record<string, any>; payload: Record<string, any> } {
  const [h, p] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(h ?? "", "base64url").toString()),
    payload: JSON.parse(Buffer.from(p ?? "", "base64url").toString()),
  };
}
