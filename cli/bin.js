#!/usr/bin/env node
// @ts-check
// Entry point of `rb` in the checkout (`npx rb`, `node cli/bin.js`). Node runs the TypeScript sources
// itself, by type stripping, as it runs the services (ADR 0011, a runtime without a transpiler):
// no transpiler and no build step. The installable package is this file and its imports bundled
// into one JavaScript file by `npm pack` (scripts/build-cli.ts, docs/cli.md "Installing").
// Resolved against this file's URL, not the working directory.
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
