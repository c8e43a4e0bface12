/**
 * SHUTDOWN_DELAY_MS's default (X-API-10, server/config.ts): 5 s, capped at half of a shorter
 * SHUTDOWN_TIMEOUT_MS, so that a deployment that shortened the timeout alone (to fit a 10 s stop,
 * say) still starts and still has time to drain; a delay set explicitly must stay below the timeout.
 */
import { expect, it } from "vitest";
import { loadConfig } from "../../app/load-config.ts";

it("X-API-10 SHUTDOWN_DELAY_MS unset: 5 s, or half of a shorter SHUTDOWN_TIMEOUT_MS; set, it must be shorter than the timeout", () => {
  expect(loadConfig({}).SHUTDOWN_DELAY_MS).toBe(5_000);
  expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: "4000" }).SHUTDOWN_DELAY_MS).toBe(2_000);
  expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: "0" }).SHUTDOWN_DELAY_MS).toBe(0);
  expect(loadConfig({ SHUTDOWN_DELAY_MS: "0" }).SHUTDOWN_DELAY_MS).toBe(0);
  expect(loadConfig({ SHUTDOWN_DELAY_MS: "15000", SHUTDOWN_TIMEOUT_MS: "30000" }).SHUTDOWN_DELAY_MS).toBe(15_000);
  expect(() => loadConfig({ SHUTDOWN_DELAY_MS: "5000", SHUTDOWN_TIMEOUT_MS: "5000" })).toThrow(
    /SHUTDOWN_DELAY_MS: must be shorter than SHUTDOWN_TIMEOUT_MS/,
  );
});
