import { defineConfig } from "vitest/config";

/** Against a deployment (CONFORMANCE_<SERVICE>_URL) a request may cross proxies to another instance and its database: tests get longer. */
const deployment = ["IDENTITY", "REPOSITORY", "EMAIL"].some((s) => process.env[`CONFORMANCE_${s}_URL`]);

export default defineConfig({
  test: {
    include: ["conformance/**/*.test.ts", "test/**/*.test.ts"],
    // Conformance files only (it checks the file's path): failure messages carry the services' error answers.
    setupFiles: ["conformance/harness/setup.ts"],
    testTimeout: deployment ? 90_000 : 30_000,
    hookTimeout: 60_000,
    // Two cores: two files at a time, each with its own service on its own port and database.
    maxWorkers: 2,
    pool: "forks",
  },
});
