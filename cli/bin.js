#!/usr/bin/env node
// @ts-check
// Entry point of `rb`. The client is written in TypeScript; tsx's loader is registered here so the
// command runs with plain `node cli/bin.js` (or `npx rb`) from any directory, without a build step.
import { register } from "tsx/esm/api";

register();
// Resolved against this file's URL, not the working directory.
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
