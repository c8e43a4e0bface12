// @ts-check
// The image's HEALTHCHECK (deploy/Dockerfile): exit 0 when every service this container runs answers
// GET /ready with 200, 1 otherwise (docker and compose read only the exit code). Plain JavaScript with no
// import of the project, so a check starts in the time of a bare `node`, every interval.
//
// Which services: the arguments after app/main.ts of the container's server process (read from
// /proc, so that `node app/main.ts identity` is checked on identity's port alone), or all three.
// Where: 127.0.0.1 when HOST is a wildcard (0.0.0.0, ::), else HOST; each service's *_PORT or its default.
import { readdirSync, readFileSync } from "node:fs";

const DEFAULT_PORTS = { identity: 3001, repository: 3002, email: 3003 };

/** @returns {string[]} the services named on the server's command line, all three when none are. */
function servicesOfTheServer() {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    } catch {
      continue; // ended meanwhile, or not ours to read
    }
    const main = argv.findIndex((arg) => arg.endsWith("app/main.ts"));
    if (main >= 0 && argv[0]?.endsWith("node")) {
      const named = argv.slice(main + 1).filter((arg) => arg in DEFAULT_PORTS);
      return named.length ? named : Object.keys(DEFAULT_PORTS);
    }
  }
  return Object.keys(DEFAULT_PORTS);
}

const host = ["", "0.0.0.0", "::", "[::]"].includes(process.env.HOST ?? "") ? "127.0.0.1" : (process.env.HOST ?? "127.0.0.1");
const hostInUrl = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;

/** @param {string} service */
async function ready(service) {
  const port = process.env[`${service.toUpperCase()}_PORT`] || String(DEFAULT_PORTS[/** @type {keyof DEFAULT_PORTS} */ (service)]);
  const url = `http://${hostInUrl}:${port}/ready`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    if (res.status === 200) return true;
    console.error(`${service}: ${url} answered ${res.status}`);
  } catch (err) {
    console.error(`${service}: ${url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return false;
}

const results = await Promise.all(servicesOfTheServer().map(ready));
process.exit(results.every(Boolean) ? 0 : 1);
