/** Runs `rb` with this process's arguments: what both entry points start (cli/bin.js, and the packed cli/dist/rb.js). */
import { main } from "./main.ts";

process.exitCode = await main(process.argv.slice(2));
