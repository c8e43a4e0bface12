/**
 * Deprecation and sunset headers (X-API-14, spec/README.md "Versions and breaking changes"): an
 * operation the document marks `deprecated: true` (TypeSpec `#deprecated "…"`) answers, on every
 * response, with
 * - `Deprecation: @<unix seconds>` (RFC 9745) from its `x-deprecated-at` date (else just `@0`
 *   is wrong, so the header is only sent with a date: the document must say when);
 * - `Sunset: <HTTP-date>` (RFC 8594) from `x-sunset`, the date it may be removed (oasdiff reads
 *   the same extension and refuses a removal before it);
 * - `Link: <successor>; rel="successor-version"` from `x-successor`, where to move.
 * Read from the document once per operation: the contract says it, the code only repeats it.
 */
import type { Operation } from "openapi-backend";

const cache = new WeakMap<object, Record<string, string>>();

/** The headers a deprecated operation answers with; none for a current one. */
export function deprecationHeaders(operation: Operation | undefined): Record<string, string> {
  if (!operation) return {};
  const known = cache.get(operation);
  if (known) return known;
  const o = operation as Operation & { "x-deprecated-at"?: string; "x-sunset"?: string; "x-successor"?: string };
  const headers: Record<string, string> = {};
  if (o.deprecated) {
    const at = dateOf(o["x-deprecated-at"], "x-deprecated-at", o.operationId);
    const sunset = dateOf(o["x-sunset"], "x-sunset", o.operationId);
    if (at) headers.Deprecation = `@${Math.floor(at.getTime() / 1000)}`;
    if (sunset) headers.Sunset = sunset.toUTCString();
    if (o["x-successor"]) headers.Link = `<${o["x-successor"]}>; rel="successor-version"`;
  }
  cache.set(operation, headers);
  return headers;
}

function dateOf(value: string | undefined, name: string, operationId: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new Error(`${operationId}: ${name} "${value}" is not a date (YYYY-MM-DD)`);
  return date;
}
