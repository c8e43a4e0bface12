/**
 * The custom headers a message may carry (X-EM-3): `X-…` names, or a short allow-list of list and
 * priority headers; never one the service writes itself (those are outside both).
 *
 * Names are case-insensitive (RFC 5322 §1.2.2), so two names that differ only in case are the same
 * field: `{"List-Unsubscribe": a, "list-unsubscribe": b}` would write two `List-Unsubscribe`
 * fields, which RFC 2369 and RFC 8058 never expect (a receiver picks either, or distrusts both).
 * JSON cannot say which one the sender meant, so the later one is refused by name, as a repeated
 * recipient is, rather than one of them silently dropped.
 */
import type { FieldError } from "../../../server/domain/errors.ts";

const ALLOWED_HEADERS = new Set([
  "list-unsubscribe",
  "list-unsubscribe-post",
  "list-id",
  "precedence",
  "auto-submitted",
  "importance",
  "priority",
]);
const X_HEADER = /^X-[A-Za-z0-9-]+$/i;

/** One error per name that may not be set or repeats an earlier one in another case, each naming `body.headers.<name>`. */
export function customHeaderErrors(headers: Readonly<Record<string, string>> | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Map<string, string>();
  for (const name of Object.keys(headers ?? {})) {
    const key = name.toLowerCase();
    if (!X_HEADER.test(name) && !ALLOWED_HEADERS.has(key)) {
      errors.push({ field: `body.headers.${name}`, message: "is not a header a message may set (X-… or one of the listed ones)" });
      continue;
    }
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      errors.push({ field: `body.headers.${name}`, message: `repeats the header ${earlier} (names are case-insensitive)` });
      continue;
    }
    seen.set(key, name);
  }
  return errors;
}
