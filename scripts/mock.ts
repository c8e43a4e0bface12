/**
 * `npm run mock`: Prism mock servers of every generated document, on the documented ports, for
 * front-end work before (or without) the real services. Ctrl-C stops them all.
 *   npm run mock                    all of them
 *   npm run mock -- identity email  some of them
 *   CORS_ORIGINS=http://localhost:5173 npm run mock   pages of these origins (scripts/mock-cors.ts)
 *
 * CORS is answered as the services' contracts state (X-ID-CORS-1, X-RB-10, X-EM-26), not by
 * Prism's allow-everything default.
 */
import { existsSync } from "node:fs";
import { loadConfig } from "../server/config.ts";
import { mockCorsPolicy } from "./mock-cors.ts";
import { MOCKS, startMock, type RunningMock } from "./prism.ts";

// The services' own rule for the variable: exact origins, comma-separated.
let origins: string[];
try {
  origins = loadConfig({ CORS_ORIGINS: process.env.CORS_ORIGINS }).CORS_ORIGINS;
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}

const wanted = process.argv.slice(2);
const names = (wanted.length ? wanted : Object.keys(MOCKS)) as Array<keyof typeof MOCKS>;
const running: RunningMock[] = [];
for (const name of names) {
  const mock = MOCKS[name];
  if (!mock) {
    console.error(`Unknown mock "${name}". Known: ${Object.keys(MOCKS).join(", ")}`);
    process.exit(2);
  }
  if (!existsSync(mock.file)) continue;
  running.push(await startMock(mock.file, mock.port, { quiet: true, cors: mockCorsPolicy(name, origins) }));
  console.log(`${name.padEnd(18)} mock on http://127.0.0.1:${mock.port}  (${mock.file})`);
}
const stop = async () => {
  await Promise.all(running.map((m) => m.stop()));
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
