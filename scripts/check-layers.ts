/**
 * The layering rule (ARCHITECTURE.md, "Layers"): domain modules, every file under a
 * `handlers/<service>/domain/` folder, import no HTTP framework (Koa, openapi-backend, the HTTP
 * wiring in server/http/), no handler module (`handlers/<service>/*.ts`: arrows point from handlers
 * to the domain), no HTML views (`handlers/<service>/views/`) and no query builder (knex:
 * storage owns it; the domain passes `Tx` from server/storage/transaction.ts on). The imports are
 * read with TypeScript's own pre-processor, so `import type`, re-exports and dynamic `import()`
 * count too. Browser code (every file under `web/`) runs in a browser: it imports only `web/`
 * itself, the client types generated from the contract (`generated/sdk/types/`) and npm packages,
 * never server code or a Node built-in. A service (`handlers/<service>/`) imports no other service.
 * Storage (ADR 0002): the prepared-statement layers `server/storage/sqlite/` and
 * `server/storage/postgres/` are imported only by a store's implementation for that engine (a file
 * under a `storage/sqlite/` or `storage/postgres/` folder) and by server/storage itself; the
 * dialect helpers (`server/storage/dialect.ts`) only by the modules that choose implementations
 * (a `storage/index.ts`), migrations and server/storage; and no file under a `storage/` folder
 * imports a `domain/` folder. The benchmarks (`bench/`) reach a service only through its doors: its
 * factory (`service.ts`), its configuration (`config.ts`), its storage factory (`storage/index.ts`)
 * or a domain area (`domain/<area>/<area>-area.ts`), never a store's own file, and the storage
 * rules hold for them too.
 *
 * The tooling folders (conformance/, scripts/, bench/, fuzz/) import none of each other, and what
 * they share, support/, imports nothing of the project. A step of `npm test`; exits 1 naming each
 * file and import that breaks a rule.
 *
 *   node --import tsx scripts/check-layers.ts [root]
 */
import { type Dirent, readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export interface LayerViolation {
  file: string;
  specifier: string;
  why: string;
}

/** Packages a domain module may not import (the package or any subpath). */
const FORBIDDEN_PACKAGES: Record<string, string> = {
  koa: "HTTP framework",
  "@koa/router": "HTTP framework",
  "koa-compose": "HTTP framework",
  "openapi-backend": "HTTP framework",
  knex: "query builder: storage owns knex",
  pg: "database driver: storage owns it",
  "better-sqlite3": "database driver: storage owns it",
};

/** Folders of the repository (relative, `/`-separated) that a domain module may not import from. */
const FORBIDDEN_FOLDERS: Array<[RegExp, string]> = [
  [/^server\/http\//, "HTTP layer (server/http)"],
  [/^handlers\/[^/]+\/views\//, "HTML views"],
  // The handlers call the domain, never the other way (a handler module brings HTTP types along).
  [/^handlers\/[^/]+\/[^/]+\.(ts|js)$/, "handler layer"],
];

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;

function* domainFiles(root: string): Generator<string> {
  const handlers = join(root, "handlers");
  for (const service of readdirSync(handlers, { withFileTypes: true })) {
    if (!service.isDirectory()) continue;
    const domain = join(handlers, service.name, "domain");
    let entries: Dirent[];
    try {
      entries = readdirSync(domain, { recursive: true, withFileTypes: true });
    } catch {
      continue; // a service without a domain folder
    }
    for (const e of entries) if (e.isFile() && SOURCE.test(e.name)) yield join(e.parentPath, e.name);
  }
}

function violationOf(root: string, file: string, specifier: string): string | undefined {
  if (specifier.startsWith(".")) {
    const target = relative(root, resolve(dirname(file), specifier))
      .split(sep)
      .join("/");
    return FORBIDDEN_FOLDERS.find(([pattern]) => pattern.test(target))?.[1];
  }
  const bare = specifier.replace(/^node:/, "");
  const name = bare.startsWith("@") ? bare.split("/").slice(0, 2).join("/") : bare.split("/")[0]!;
  return FORBIDDEN_PACKAGES[name];
}

function* webFiles(root: string): Generator<string> {
  let entries: Dirent[];
  try {
    entries = readdirSync(join(root, "web"), { recursive: true, withFileTypes: true });
  } catch {
    return; // no browser code
  }
  for (const e of entries) if (e.isFile() && SOURCE.test(e.name)) yield join(e.parentPath, e.name);
}

/** Where browser code may reach: itself and the generated client types. */
const WEB_FOLDERS = [/^web\//, /^generated\/sdk\/types\//];

function webViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (specifier.startsWith(".")) {
    const target = relative(root, resolve(dirname(file), specifier))
      .split(sep)
      .join("/");
    return WEB_FOLDERS.some((pattern) => pattern.test(target)) ? undefined : "browser code reaches only web/ and generated/sdk/types/";
  }
  const name = specifier.replace(/^node:/, "").split("/")[0]!;
  return specifier.startsWith("node:") || builtinModules.includes(name) ? "Node built-in: browser code runs in a browser" : undefined;
}

function* filesUnder(root: string, folder: string): Generator<string> {
  let entries: Dirent[];
  try {
    entries = readdirSync(join(root, folder), { recursive: true, withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isFile() && SOURCE.test(e.name)) yield join(e.parentPath, e.name);
}

const targetOf = (root: string, file: string, specifier: string) =>
  relative(root, resolve(dirname(file), specifier))
    .split(sep)
    .join("/");

/**
 * The arrows between folders: `app/` holds the composition roots (the server process,
 * the admin command, migrations) and nothing imports it; `server/` is the shared runtime the
 * handlers use, so it imports neither `handlers/` nor `app/`.
 */
function arrowViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const from = relative(root, file).split(sep).join("/");
  const target = targetOf(root, file, specifier);
  if (/^app\//.test(target) && !from.startsWith("app/")) return "composition root: nothing imports app/";
  if (from.startsWith("server/") && /^handlers\//.test(target))
    return "shared runtime: server/ never imports handlers/ (the composition roots in app/ do)";
  return undefined;
}

/**
 * Handler modules (`handlers/<service>/*.ts`) do not import one another: what several of them use
 * lives in the service's shared module, `<service>-handlers.ts` or its `shared/` folder. Only
 * `service.ts`, which assembles the handler map, imports every handler module.
 */
function siblingViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const from = relative(root, file).split(sep).join("/");
  const service = /^handlers\/([^/]+)\//.exec(from)?.[1];
  if (!service || from === `handlers/${service}/service.ts`) return undefined;
  const target = targetOf(root, file, specifier);
  const m = /^handlers\/([^/]+)\/([^/]+\.(ts|js))$/.exec(target);
  if (!m || m[1] !== service || m[2] === `${service}-handlers.ts`) return undefined;
  return `sibling handler module: share through handlers/${service}/${service}-handlers.ts or handlers/${service}/shared/`;
}

/**
 * A service never imports another service: nothing under `handlers/<service>/` (handlers, domain,
 * storage, views) reaches into `handlers/<other>/`. What two services share lives in `server/`
 * (the webhook engine, storage helpers, HTTP wiring), so each service can be read, changed and
 * deployed on its own.
 */
function serviceViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const service = /^handlers\/([^/]+)\//.exec(relative(root, file).split(sep).join("/"))?.[1];
  const other = /^handlers\/([^/]+)\//.exec(targetOf(root, file, specifier))?.[1];
  if (!service || !other || other === service) return undefined;
  return `another service (handlers/${other}/): a service imports no other service; shared code lives in server/`;
}

/** Where a file may import the dialect helpers: a selection module, a migration, server/storage itself. */
const choosesImplementations = (from: string) =>
  /(^|\/)storage\/index\.ts$/.test(from) ||
  /(^|\/)storage\/(migrations\/|migrations\.ts$)/.test(from) ||
  from.startsWith("server/storage/");

/**
 * The storage rules (ADR 0002): one implementation per engine, chosen once. `server/storage/sqlite/`
 * only from `storage/sqlite/` folders, `server/storage/postgres/` only from `storage/postgres/`
 * folders, `server/storage/dialect.ts` only where implementations are chosen (and migrations), and
 * storage never reaches up into a domain.
 */
function storageViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const from = relative(root, file).split(sep).join("/");
  const target = targetOf(root, file, specifier);
  for (const engine of ["sqlite", "postgres"]) {
    if (target.startsWith(`server/storage/${engine}/`) && !from.startsWith("server/storage/") && !from.includes(`storage/${engine}/`))
      return `${engine} statements: only a store's ${engine} implementation (a storage/${engine}/ folder) imports server/storage/${engine}/`;
  }
  if (target === "server/storage/dialect.ts" && !choosesImplementations(from))
    return "dialect helpers: only a storage/index.ts that chooses implementations, migrations and server/storage look at the dialect";
  if (/(^|\/)storage\//.test(from) && /(^|\/)domain\//.test(target))
    return "storage never imports the domain (pass the value in, or move it into storage)";
  return undefined;
}

/** The tooling folders: each runs on its own (the suite, the scripts, the benchmarks, the fuzzer's fixtures). */
const TOOLING = ["conformance", "scripts", "bench", "fuzz"];

/**
 * The tooling folders import none of each other: what two of them share (a free port, a command run to its end, the contract
 * documents and their validator) lives in `support/`, which imports nothing of the project at all
 * (npm packages and Node built-ins only), so no tooling folder stands above another and none needs
 * another to run. `test/` tests the tooling and may import any of it.
 */
function toolingViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const from = relative(root, file).split(sep)[0]!;
  const to = targetOf(root, file, specifier).split("/")[0]!;
  if (from === "support")
    return to === "support" ? undefined : `support/ imports nothing of the project (${to}/): npm packages and Node built-ins only`;
  if (TOOLING.includes(from) && TOOLING.includes(to) && to !== from)
    return `tooling: ${from}/ imports no other tooling folder (${to}/); what they share lives in support/`;
  return undefined;
}

/**
 * The benchmarks measure the product through the doors the services use, so that a storage change
 * is not a benchmark change: a service's factory (`handlers/<service>/service.ts`), its
 * configuration section (`config.ts`), its storage factory (`storage/index.ts`, with the migrations and retention rules it exports), a domain area
 * (`domain/<area>/<area>-area.ts`) and the shared runtime, whose storage folders (the webhook
 * engine's) are reached through their `index.ts` too.
 */
function benchViolationOf(root: string, file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const target = targetOf(root, file, specifier);
  const inService = /^handlers\/[^/]+\/(.+)$/.exec(target)?.[1];
  if (inService !== undefined) {
    if (["service.ts", "config.ts", "storage/index.ts"].includes(inService) || /^domain\/([^/]+)\/\1-area\.ts$/.test(inService))
      return undefined;
    return "benchmark: a service only through its service.ts, config.ts, storage/index.ts or a domain area (domain/<area>/<area>-area.ts)";
  }
  if (/^server\/.+\/storage\//.test(target) && !target.endsWith("/storage/index.ts"))
    return "benchmark: a storage folder only through its index.ts";
  return undefined;
}

function* handlerFiles(root: string): Generator<string> {
  for (const file of filesUnder(root, "handlers")) if (!/[/\\]domain[/\\]/.test(relative(root, file))) yield file;
}

function violationsIn(
  root: string,
  files: Iterable<string>,
  rule: (root: string, file: string, specifier: string) => string | undefined,
): LayerViolation[] {
  const violations: LayerViolation[] = [];
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      const why = rule(root, file, specifier);
      if (why) violations.push({ file: relative(root, file).split(sep).join("/"), specifier, why });
    }
  }
  return violations;
}

/**
 * Every import under `root` that breaks the layering rules: domain modules, browser code, the arrows
 * between folders, sibling handlers, other services, the tooling folders. One entry per file and
 * import, with every rule it breaks.
 */
export function checkLayers(root: string): LayerViolation[] {
  const all = [
    ...violationsIn(root, domainFiles(root), violationOf),
    ...violationsIn(root, webFiles(root), webViolationOf),
    ...["server", "handlers", "cli", "web", "scripts"].flatMap((folder) => violationsIn(root, filesUnder(root, folder), arrowViolationOf)),
    ...violationsIn(root, handlerFiles(root), siblingViolationOf),
    ...violationsIn(root, filesUnder(root, "handlers"), serviceViolationOf),
    ...["server", "handlers", "app", "cli", "bench"].flatMap((folder) => violationsIn(root, filesUnder(root, folder), storageViolationOf)),
    ...violationsIn(root, filesUnder(root, "bench"), benchViolationOf),
    ...[...TOOLING, "support"].flatMap((folder) => violationsIn(root, filesUnder(root, folder), toolingViolationOf)),
  ];
  const byImport = new Map<string, LayerViolation>();
  for (const v of all) {
    const key = `${v.file}\0${v.specifier}`;
    const seen = byImport.get(key);
    byImport.set(key, seen ? { ...seen, why: `${seen.why}; ${v.why}` } : v);
  }
  return [...byImport.values()];
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
  const violations = checkLayers(root);
  for (const v of violations) console.error(`${v.file}: imports "${v.specifier}" (${v.why})`);
  if (violations.length) {
    console.error();
    process.exitCode = 1;
  } else console.log();
}
