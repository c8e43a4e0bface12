/**
 * The SDK document of a service: its OpenAPI document without the operations marked
 * `x-internal: true` (hosted HTML pages and their form posts, the dashboard's assets, the API
 * reference page and its documents, e-mail tracking links: what browsers and mail clients call,
 * never an SDK), and without the components, security schemes and tags only those operations
 * used. The service itself keeps routing every operation from the full document.
 */

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

type Json = Record<string, any>;

/** Every `$ref` target under `node`, as `#/components/<kind>/<name>`. */
function refsIn(node: unknown, into: Set<string>): void {
  if (Array.isArray(node)) {
    for (const n of node) refsIn(n, into);
    return;
  }
  if (!node || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string") into.add(value);
    else refsIn(value, into);
  }
}

/**
 * Removes the components (other than security schemes) that nothing outside components refers to,
 * directly or through other components. TypeSpec emits every model that extends a referenced one
 * (all services' error models extend Problem), so a document would otherwise carry the other
 * services' error models too.
 */
export function pruneComponents(doc: Json): void {
  const { components, ...rest } = doc;
  const reachable = new Set<string>();
  refsIn(rest, reachable);
  const queue = [...reachable];
  while (queue.length > 0) {
    const ref = queue.pop()!;
    const [, , kind, name] = ref.split("/");
    const found = new Set<string>();
    refsIn(components?.[kind!]?.[decodeURIComponent(name!)], found);
    for (const r of found) if (!reachable.has(r)) reachable.add(r), queue.push(r);
  }
  for (const [kind, entries] of Object.entries<Json>(components ?? {})) {
    if (kind === "securitySchemes") continue;
    for (const name of Object.keys(entries))
      if (!reachable.has(`#/components/${kind}/${encodeURIComponent(name)}`) && !reachable.has(`#/components/${kind}/${name}`))
        delete entries[name];
    if (Object.keys(entries).length === 0) delete components[kind];
  }
}

export function sdkDocument(full: Json): Json {
  const doc: Json = structuredClone(full);
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]?.["x-internal"] === true) delete item[method];
    if (!METHODS.some((m) => item[m])) delete doc.paths[path];
  }

  pruneComponents(doc);
  const components = doc.components;

  // `security: [{}]` (TypeSpec's NoAuth) and `security: []` both say "no credentials"; generators
  // read a non-empty list as "needs credentials" (openapi-python-client then asks for an
  // AuthenticatedClient to log in with), so the SDK document says it the plain way.
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (op?.security?.length > 0 && op.security.every((req: Json) => Object.keys(req).length === 0)) op.security = [];
    }
  }

  // A model that extends another is written by TypeSpec as `allOf: [base]` beside its own
  // `properties`; openapi-python-client then ignores the own properties and answers with the base
  // (every error came out as a plain Problem, its narrowed `code` lost). The same schema with its own
  // part inside `allOf` is read right by every generator tried.
  for (const schema of Object.values<Json>(components?.schemas ?? {})) {
    if (!Array.isArray(schema.allOf) || !schema.properties) continue;
    const { allOf, type, properties, required, additionalProperties, ...rest } = schema;
    const own: Json = { type: "object", properties };
    if (required) own.required = required;
    if (additionalProperties !== undefined) own.additionalProperties = additionalProperties;
    for (const key of Object.keys(schema)) delete schema[key];
    Object.assign(schema, { ...rest, allOf: [...allOf, own] });
  }

  // Security schemes and tags that some remaining operation names.
  const schemes = new Set<string>();
  const tags = new Set<string>();
  for (const req of doc.security ?? []) for (const s of Object.keys(req)) schemes.add(s);
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const req of op.security ?? []) for (const s of Object.keys(req)) schemes.add(s);
      for (const tag of op.tags ?? []) tags.add(tag);
    }
  }
  if (components?.securitySchemes) {
    for (const name of Object.keys(components.securitySchemes)) if (!schemes.has(name)) delete components.securitySchemes[name];
    if (Object.keys(components.securitySchemes).length === 0) delete components.securitySchemes;
  }
  if (Array.isArray(doc.tags)) doc.tags = doc.tags.filter((t: Json) => tags.has(t.name));
  return doc;
}
