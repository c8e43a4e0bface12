/**
 * Redirect URI matching (X-ID-APP-1): exact string comparison with a registered URI, except that
 * for loopback URIs (`http://127.0.0.1`, `http://[::1]`, `http://localhost`) any port matches, as
 * RFC 8252 §7.3 asks of native apps that listen on an ephemeral port. Everything but the port
 * (path, query) must still be identical, character for character.
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(?::(\d{1,5}))?([/?].*)?$/;

/** The URI without its port when it is a loopback URI; undefined otherwise. */
function loopbackKey(uri: string): string | undefined {
  const m = LOOPBACK.exec(uri);
  return m ? `http://${m[1]}${m[3] ?? ""}` : undefined;
}

/** Whether `given` may be used with an application registering `registered`. */
export function redirectUriAllowed(registered: string[], given: string): boolean {
  if (registered.includes(given)) return true;
  const key = loopbackKey(given);
  return key !== undefined && registered.some((r) => loopbackKey(r) === key);
}
