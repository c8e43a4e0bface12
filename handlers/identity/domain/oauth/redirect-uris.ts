/**
 * Redirect URIs (X-ID-APP-1): what may be registered, and whether a given one matches.
 *
 * Registration: absolute, no fragment, no credentials, `https`, or `http` on a loopback host, and
 * a URL to the WHATWG URL parser with a port of 1-65535. Matching: exact string comparison with a
 * registered URI, except that for loopback URIs (`http://127.0.0.1`, `http://[::1]`,
 * `http://localhost`) any port matches, as RFC 8252 §7.3 asks of native apps that listen on an
 * ephemeral port; everything but the port (path, query) must still be identical. The given URI
 * must parse too: it becomes the `Location` of every answer (codes and errors), and a URL the
 * parser refuses (`:99999`) would fail only there, after a sign-in, with a code already stored.
 */
import { isLoopbackHost, parseClientUrl } from "../client-urls.ts";

const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::(\d{1,5}))?([/?].*)?$/;

/** The URI without its port when it is a loopback URI; undefined otherwise. */
function loopbackKey(uri: string): string | undefined {
  const m = LOOPBACK.exec(uri);
  return m ? `http://${m[1]}${m[3] ?? ""}` : undefined;
}

/** Why `uri` may not be registered (X-ID-APP-1), or undefined. */
export function redirectUriProblem(uri: string): string | undefined {
  const parsed = parseClientUrl(uri);
  if ("problem" in parsed) return parsed.problem === "port" ? "port must be 1-65535" : "must be an absolute URI";
  const { url } = parsed;
  if (uri.includes("#")) return "must not contain a fragment (RFC 6749 §3.1.2)";
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return undefined;
  return "must use https (http is allowed only for localhost, 127.0.0.1 and [::1])";
}

/**
 * Why `given` cannot be the redirect URI of a client that registered `registered`, or undefined
 * when it can. `loopbackAnyPort` is false for the first-party dashboard client, whose one URI is
 * matched exactly even on a loopback issuer (X-ID-ADM-1).
 */
export function redirectUriRefusal(registered: string[], given: string, o: { loopbackAnyPort: boolean }): string | undefined {
  const parsed = parseClientUrl(given);
  if ("problem" in parsed)
    return parsed.problem === "port"
      ? "The redirect URI is not a valid URL: its port must be 1-65535."
      : "The redirect URI is not a valid absolute URL.";
  if (registered.includes(given)) return undefined;
  const key = o.loopbackAnyPort ? loopbackKey(given) : undefined;
  if (key !== undefined && registered.some((r) => loopbackKey(r) === key)) return undefined;
  return "The redirect URI is not registered for this application.";
}
