/**
 * Web origins (RFC 6454) as configuration and settings give them: lists that CORS compares with
 * a browser's `Origin` header as exact strings (server/http/cors.ts), so only the form browsers
 * send is accepted.
 */

/**
 * Undefined when `text` is an origin exactly as a browser sends it in `Origin` (RFC 6454 serialisation by
 * the WHATWG URL parser: lower-case scheme and host, punycode, no default port, no path, no
 * trailing slash), else why not. Origins are compared as exact strings, so a list may hold only
 * these. `loopbackHttpOnly`: plain http only for localhost, 127.0.0.1 and [::1].
 */
export function originProblem(text: string, options: { loopbackHttpOnly?: boolean } = {}): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an origin such as https://app.example.com";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http or https origin";
  if (options.loopbackHttpOnly && url.protocol === "http:" && !["localhost", "127.0.0.1", "[::1]"].includes(url.hostname)) {
    return "must be https (http only for localhost, 127.0.0.1 and [::1])";
  }
  if (url.origin !== text)
    return `must be written exactly as browsers send it: ${JSON.stringify(url.origin)} (scheme, host and port only; lower case; no default port, path or trailing slash)`;
  return undefined;
}
