/**
 * URLs a client sent, read the way a browser will read them: by the WHATWG URL parser (Node's
 * `URL`), never by a regular expression alone. A string the parser refuses, or reads differently
 * from how it looks (it drops tabs and newlines, takes `\` for `/`, resolves dot segments), must
 * not end up in a `Location` as it came (X-ID-APP-1, X-ID-SESS-2).
 */

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether a host is loopback (X-ID-APP-1, RFC 8252 §7.3): the only hosts allowed over plain http. */
export const isLoopbackHost = (hostname: string): boolean => LOOPBACK_HOSTS.has(hostname.toLowerCase());

/** The port written in an absolute URL's authority, as text (the parser only says "invalid" when it is out of range). */
const WRITTEN_PORT = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*:(\d+)(?=[/?#\\]|$)/i;

/**
 * The parsed URL, or why it is not one: the parser must accept it, and a port, when one is
 * written, must be 1-65535 (0 is no port a client listens on; the parser refuses > 65535).
 */
export function parseClientUrl(text: string): { url: URL } | { problem: "port" | "syntax" } {
  const port = WRITTEN_PORT.exec(text)?.[1];
  if (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65535)) return { problem: "port" };
  try {
    return { url: new URL(text) };
  } catch {
    return { problem: "syntax" };
  }
}

/**
 * X-ID-SESS-2: `value` resolved against this server's public URL, as a browser resolves a
 * `Location`; the parser's normalised absolute URL when it keeps that origin, else undefined. The
 * absolute form matters: a normalised path may begin with `//` (`/.//evil.example`), which a
 * relative `Location` would turn into another host.
 */
export function sameOriginHref(value: string, base: string): string | undefined {
  try {
    const url = new URL(value, base);
    return url.origin === new URL(base).origin ? url.href : undefined;
  } catch {
    return undefined;
  }
}
