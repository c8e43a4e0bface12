/**
 * HTTP Strict Transport Security (X-API-17, RFC 6797): a service whose public URL is https says so
 * on every answer, so that a browser that once reached it over https never again follows an http
 * link to it (no downgrade, no cookie sent in the clear).
 *
 * The services themselves listen on plain http behind the deployment's TLS-terminating proxy, so
 * the transport of a request says nothing; the configured public URL is what the deployment
 * promises its clients. RFC 6797 §7.2 forbids the header over non-secure transport, so a service
 * whose public URL is http never sends it (and a browser ignores one received over http, §8.1).
 *
 * The value: two years (63072000 s), what OWASP's HSTS cheat sheet recommends and above the one
 * year hstspreload.org asks for; `includeSubDomains`, which covers the hosts below the service's
 * own (`*.id.example.com`), never its parent domain. Not `preload`: that commits the whole
 * registrable domain, a decision for its owner, not for one service on it.
 */
import type Koa from "koa";

export const STRICT_TRANSPORT_SECURITY = "max-age=63072000; includeSubDomains";

/** The header value for a service reached at `publicUrl`, or undefined when that URL is not https. */
export function strictTransportSecurityFor(publicUrl: string | undefined): string | undefined {
  if (!publicUrl) return undefined;
  try {
    return new URL(publicUrl).protocol === "https:" ? STRICT_TRANSPORT_SECURITY : undefined;
  } catch {
    return undefined;
  }
}

/** Koa middleware: sets the header before anything downstream answers, so errors and pages carry it too. */
export function strictTransportSecurity(publicUrl: string | undefined): Koa.Middleware {
  const value = strictTransportSecurityFor(publicUrl);
  return async (ctx, next) => {
    if (value) ctx.set("Strict-Transport-Security", value);
    await next();
  };
}
