// @ts-check
// Preloaded by test/deploy/start.test.ts (`node --import ./test/deploy/production-imports.js app/main.ts`, in a copy
// of what the image holds): makes every package that `npm ci --omit=dev` leaves out behave as if it were
// not installed, and refuses tsx, so that a start that passes here needs neither dev dependencies nor a
// transpiler. Which packages are left out is package-lock.json's word (`dev` / `devOptional`). A refused
// import throws what a missing package throws (MODULE_NOT_FOUND), so code that falls back when an optional
// package is absent does so here as in production; each refusal is also printed to stderr, prefixed
// "production-imports: refused", for the test to find.
import { readFileSync, realpathSync } from "node:fs";
import { registerHooks } from "node:module";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Packages the start path must not load even though a production install has them. */
const TRANSPILERS = ["tsx"];

const modules = realpathSync(join(process.cwd(), "node_modules"));
/** @type {{ packages: Record<string, { dev?: boolean, devOptional?: boolean }> }} */
const lock = JSON.parse(readFileSync(join(process.cwd(), "package-lock.json"), "utf8"));
const leftOut = new Set(
  Object.entries(lock.packages)
    .filter(([, entry]) => entry.dev || entry.devOptional)
    .map(([key]) => key),
);
for (const name of TRANSPILERS) leftOut.add(`node_modules/${name}`);

/**
 * The package-lock.json key of the package a file belongs to: `node_modules/a`, `node_modules/@s/a`,
 * `node_modules/a/node_modules/b`, … (a nested copy is its own entry).
 * @param {string} file
 */
function packageKey(file) {
  const parts = relative(modules, file).split(sep);
  const key = ["node_modules"];
  for (let i = 0; i < parts.length; ) {
    const name = parts[i]?.startsWith("@") ? parts.slice(i, i + 2) : parts.slice(i, i + 1);
    key.push(...name);
    i += name.length;
    if (parts[i] !== "node_modules") break;
    key.push("node_modules");
    i += 1;
  }
  return key.join("/");
}

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (!resolved.url.startsWith("file:")) return resolved;
    const file = fileURLToPath(resolved.url);
    if (!file.startsWith(modules + sep)) return resolved;
    const key = packageKey(file);
    if (!leftOut.has(key)) return resolved;
    process.stderr.write(`production-imports: refused ${specifier} (${key} is not in a production install, or is a transpiler)\n`);
    const missing = new Error(`Cannot find package '${specifier}' (not in a production install)`);
    Object.assign(missing, { code: context.conditions.includes("require") ? "MODULE_NOT_FOUND" : "ERR_MODULE_NOT_FOUND" });
    throw missing;
  },
});
