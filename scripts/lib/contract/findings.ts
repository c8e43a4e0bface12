/**
 * The project's reading of oasdiff's findings (X-API-14, spec/README.md "What is breaking"):
 * - where a finding is (`POST /repository`, or `components`), and which response status it names;
 * - a request property removed from a sealed request body is breaking here, where oasdiff says only
 *   WARN: every request body is sealed (`additionalProperties: false`, spec/README.md
 *   "Conventions"), so a client that still sends the property gets 400;
 * - which changes TypeSpec applies to every version it emits (descriptions, examples, error
 *   responses, security schemes, tags, deprecation): all others are what `@typespec/versioning`
 *   marks per version (operations, parameters, properties, enum members, types), so a regenerated
 *   older version must not show them against its release.
 */
import type { Finding } from "./oasdiff.ts";

export const where = (f: Finding): string => (f.operation && f.path ? `${f.operation} ${f.path}` : (f.section ?? "document"));

/** `the response status `400``, `with the status `413``, `with the `200` status`: the status oasdiff names. */
const STATUS = / (?:for|with) the (?:response )?status `([^`]+)`| with the `([^`]+)` status/;

export const statusOf = (f: Finding): string | undefined => {
  const m = STATUS.exec(f.text);
  return m ? (m[1] ?? m[2]) : undefined;
};

/** The text without the status it names: what repeats across an operation's responses. */
export const withoutStatus = (text: string): string => text.replace(STATUS, "");

const isErrorStatus = (status: string | undefined) => status !== undefined && /^([45]|default)/i.test(status);

/** Changes oasdiff reports on operations that TypeSpec cannot mark per version, besides error responses. */
const EVERY_VERSION = [
  "endpoint-deprecated",
  "endpoint-reactivated",
  "api-tag-",
  "api-operation-id-",
  "api-security-",
  "api-deprecated-",
  "api-sunset-",
];

/**
 * True when TypeSpec applies the change to every version it emits, so a regenerated older version
 * may show it against its release: outside paths (components, security schemes), on an error
 * response, or one of EVERY_VERSION. Descriptions and examples are never findings.
 */
export function appliesToEveryVersion(f: Finding): boolean {
  if (!f.path) return true;
  if (f.id.startsWith("response-non-success-status") || isErrorStatus(statusOf(f))) return true;
  return EVERY_VERSION.some((prefix) => f.id.startsWith(prefix));
}

type Schema = Record<string, any>;

function resolve(doc: any, schema: Schema | undefined): Schema | undefined {
  let s = schema;
  for (let hops = 0; s && typeof s.$ref === "string" && hops < 32; hops++) {
    s = s.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((node: any, key: string) => node?.[key], doc);
  }
  return s;
}

/** A property of an object schema, its `allOf` parts included. */
function propertyOf(doc: any, schema: Schema, name: string): Schema | undefined {
  return schema.properties?.[name] ?? (schema.allOf ?? []).map((part: Schema) => resolve(doc, part)?.properties?.[name]).find(Boolean);
}

const sealed = (doc: any, schema: Schema): boolean =>
  schema.additionalProperties === false || (schema.allOf ?? []).some((part: Schema) => resolve(doc, part)?.additionalProperties === false);

/**
 * The object schema that holds a request property of an operation, by oasdiff's name for it
 * (`defaultBranch`, `options/retries`, `items/name` for a property of an array's items), in one of
 * the operation's request media types.
 */
function holders(doc: any, f: Finding, property: string): Schema[] {
  const operation = doc?.paths?.[f.path ?? ""]?.[(f.operation ?? "").toLowerCase()];
  const media = Object.values<Schema>(resolve(doc, operation?.requestBody)?.content ?? {});
  const steps = property.split("/").slice(0, -1);
  return media.flatMap((m) => {
    let s = resolve(doc, m.schema);
    for (const step of steps) {
      if (!s) break;
      s = resolve(doc, propertyOf(doc, s, step) ?? (step === "items" ? s.items : undefined));
    }
    return s ? [s] : [];
  });
}

/**
 * Applies the project's reading to oasdiff's findings of `base` → `revision` (parsed documents):
 * a request property removed from a sealed object becomes breaking (level 3), saying why.
 */
export function reclassify(findings: Finding[], base: any, revision: any): Finding[] {
  return findings.map((f) => {
    if (f.id !== "request-property-removed") return f;
    const property = /the request property `([^`]+)`/.exec(f.text)?.[1];
    if (!property) return f;
    // The object as the service validates it now; if it is gone, as the release had it.
    const now = holders(revision, f, property);
    const objects = now.length > 0 ? now.map((s) => ({ s, doc: revision })) : holders(base, f, property).map((s) => ({ s, doc: base }));
    if (!objects.some(({ s, doc }) => sealed(doc, s))) return f;
    return {
      ...f,
      level: 3,
      text: `${f.text} (the request body is sealed, \`additionalProperties: false\`: a client that still sends it gets 400)`,
    };
  });
}
