/**
 * The OpenAPI document as openapi-backend uses it (dereferenced, routed, every operation's request
 * and response validators compiled), made once per document and process.
 *
 * Compiling the validators is most of a service's start (ajv compiles a schema per operation,
 * seconds for identity's document). A process that starts a service more than once (a test suite
 * starting one per file, an in-process restart) takes the compiled form again instead of compiling
 * the same document anew. What is shared holds no per-service state: the dereferenced document is
 * only read, the router matches paths, and a compiled validator is a pure function of its schema.
 * Handlers and security handlers stay per backend instance.
 */
import { OpenAPIBackend, type Document, type Options } from "openapi-backend";
import addFormats from "ajv-formats";
import { matchesEmailFormat } from "../email-address.ts";

type Compiled = Pick<OpenAPIBackend, "definition" | "router" | "validator">;

/** By the document's path, or the parsed document itself. */
const compiled = new Map<string | Document, Promise<Compiled>>();

/** The options every service's backend is made with: strict, validating, coercing parameters. */
const backendOptions = (definition: string | Document): Options => ({
  definition,
  strict: true,
  quick: false,
  validate: true,
  coerceTypes: true,
  // openapi-backend coerces query, path and header parameters only (coerceTypes above); JSON bodies keep their types.
  ajvOpts: { useDefaults: true, allErrors: true },
  customizeAjv: (ajv) => {
    addFormats.default(ajv);
    // ajv-formats' `email`, and no domain that ends in a number (an IPv4 address): X-API-18.
    ajv.addFormat("email", matchesEmailFormat);
    return ajv;
  },
});

function compile(definition: string | Document): Promise<Compiled> {
  let made = compiled.get(definition);
  if (!made) {
    made = new OpenAPIBackend(backendOptions(definition)).init().then(({ definition: document, router, validator }) => {
      freezeOperations(router);
      return { definition: document, router, validator };
    });
    // A document that failed to compile is tried again by the next start, not answered from the cache.
    made.catch(() => compiled.delete(definition));
    compiled.set(definition, made);
  }
  return made;
}

/**
 * An initialized backend for the document, with no handlers yet: its handlers registered after
 * this are checked against the document's operations and security schemes (strict mode), as
 * openapi-backend's own `init` checks them.
 */
export async function backendFor(definition: string | Document): Promise<OpenAPIBackend> {
  const api = new OpenAPIBackend(backendOptions(definition));
  Object.assign(api, await compile(definition), { initialized: true });
  return api;
}

/**
 * openapi-backend rebuilds its operation list (a lodash chain copying every path of the document)
 * on each routing and validation call. The document never changes after it is compiled, so the list
 * is built once and every later call gets that one.
 */
function freezeOperations(router: OpenAPIBackend["router"]): void {
  const operations = router.getOperations();
  router.getOperations = () => operations;
}
