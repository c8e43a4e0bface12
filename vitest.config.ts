import { defineConfig } from "vitest/config";

/** Against a deployment (CONFORMANCE_<SERVICE>_URL) a request may cross proxies to another instance and its database: tests get longer. */
const deployment = ["IDENTITY", "REPOSITORY", "EMAIL"].some((s) => process.env[`CONFORMANCE_${s}_URL`]);

/**
 * Files that each run in a fresh process, whatever their project shares:
 * - one that measures this process's event loop (run after other files in a shared process, its
 *   longest stall was over its bound in every run; alone, under it);
 * - one that checks what a process-wide registry holds (every SQLite statement the process defined),
 *   which in a shared process holds the other files' statements too.
 */
const needsItsOwnProcess = ["conformance/email/event-loop.test.ts", "test/storage/planner-rule.test.ts"];

export default defineConfig({
  test: {
    // Conformance files only (it checks the file's path): failure messages carry the services' error answers.
    setupFiles: ["conformance/harness/setup.ts"],
    testTimeout: deployment ? 90_000 : 30_000,
    hookTimeout: 60_000,
    // Two cores: two files at a time, each with its own service on its own port and database.
    maxWorkers: 2,
    pool: "forks",
    projects: [
      {
        extends: true,
        test: {
          name: "conformance",
          include: ["conformance/**/*.test.ts"],
          exclude: needsItsOwnProcess,
          // In-process, a worker runs its files one after another in one process: each file starts
          // its own services on its own database, and the harness keeps no state a file needs fresh
          // (the contract recorder forgets a service when its port closes), so what a worker reuses
          // is the modules it imported and each OpenAPI document compiled once
          // (server/http/compiled-document.ts), most of a small file's time. Against a deployment
          // each file keeps its own process: the harness signs in once per file there.
          isolate: deployment,
        },
      },
      // The project's own tests share worker processes as the in-process conformance files do: none
      // changes process-wide state (environment, module mocks, fake timers, the working directory), and
      // each starts what it needs on its own port and directory.
      { extends: true, test: { name: "project", include: ["test/**/*.test.ts"], exclude: needsItsOwnProcess, isolate: false } },
      { extends: true, test: { name: "own-process", include: needsItsOwnProcess, isolate: true } },
    ],
  },
});
