import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["conformance/**/*.test.ts", "test/**/*.test.ts"],
    // Conformance files only (it checks the file's path): failure messages carry the services' error answers.
    setupFiles: ["conformance/harness/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: two files at a time, each with its own service on its own port and database.
    maxWorkers: 2,
    pool: "forks",
  },
});
