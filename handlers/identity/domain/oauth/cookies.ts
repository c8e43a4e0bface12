/** Cookie parsing and the attributes of the area's cookies (X-ID-SESS-1). */
export const SESSION_COOKIE = "identity_session";
export const CSRF_COOKIE = "identity_csrf";
export const SOCIAL_COOKIE = "identity_social";
/** The pending account link of a social sign-in (X-ID-SOC-1), sealed by this server. */
export const SOCIAL_LINK_COOKIE = "identity_social_link";

/** The cookies of a `Cookie` header (first value wins; values are not decoded: ours are base64url). */
export function parseCookies(header: string | string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const text = Array.isArray(header) ? header.join("; ") : (header ?? "");
  for (const part of text.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

export interface CookieOptions {
  secure: boolean;
  path?: string;
  maxAgeSeconds?: number;
}

/** A `Set-Cookie` value: always HttpOnly and SameSite=Lax; Secure when the issuer is https. */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  const parts = [`${name}=${value}`, `Path=${o.path ?? "/"}`, "HttpOnly", "SameSite=Lax"];
  if (o.maxAgeSeconds !== undefined) parts.push(`Max-Age=${o.maxAgeSeconds}`);
  if (o.secure) parts.push("Secure");
  return parts.join("; ");
}

export const clearCookie = (name: string, o: CookieOptions) => serializeCookie(name, "", { ...o, maxAgeSeconds: 0 });
