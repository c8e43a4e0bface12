#!/usr/bin/env node
// @ts-check
// Entry point of `rb` in the checkout (`npx rb`, `node cli/bin.js`). Node runs the TypeScript sources
// itself, by type stripping, as it runs the services (ADR 0011, a runtime without a transpiler): no
// transpiler and no build step. The installable package is cli/run.ts and its imports bundled into one
// JavaScript file, which runs on older Node too (scripts/build-cli.ts, docs/cli.md "Installing").
if (!process.features.typescript) {
  process.stderr.write(
    `rb from the checkout runs its TypeScript sources, which needs Node 24 (this is Node ${process.version}).\n` +
      "Run `npm run setup` (it provides Node 24 to npm scripts and npx), or install the packed rb: see docs/cli.md.\n",
  );
  process.exit(1);
}
// Resolved against this file's URL, not the working directory.
await import("./run.ts");
