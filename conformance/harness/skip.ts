/**
 * Tests that cannot run against a deployment (CONFORMANCE_<SERVICE>_URL) are reported skipped
 * with the reason, never passed: `if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock)`.
 * The reason goes to vitest (`ctx.skip(note)`) and to the task's meta, where the JSON results
 * carry it to scripts/conformance.ts's report and JUnit file (vitest's own JSON drops the note).
 */
import { beforeEach, TestRunner, type TestContext } from "vitest";

declare module "vitest" {
  interface TaskMeta {
    skipReason?: string;
  }
}

/** Why a test needs the in-process target; each reason says what a deployment does not give. */
export const NEEDS = {
  clock: "needs the injected clock: a deployment's time cannot be moved",
  ownUsers: "needs users created through the service's admin path (in-process only)",
  clientAddresses: "needs several client addresses (loopback aliases of an in-process service)",
  anotherInstance: "needs a second instance on the same database (in-process only)",
  database: "needs direct database access (in-process only)",
  socialUpstream: "needs the local social sign-in upstream the suite starts (in-process only)",
  service: "needs the in-process service to arrange its state",
  organizations: "needs organizations of its own (a deployment gives one: CONFORMANCE_IDENTITY_ADMIN_EMAIL's)",
  webhookReceivers:
    "needs webhook receivers on the suite's own 127.0.0.1 ports over plain http, which a deployment must not be allowed to reach, and the injected clock",
  providers: "needs the social providers the suite configures (IDENTITY_SOCIAL_PROVIDERS of the in-process target)",
  registrationLimit:
    "needs a user registered over POST /api/users, which the deployment refused with 429 (its registrations per client address per hour are spent): hand the suite pre-made users, CONFORMANCE_IDENTITY_USERS (npm run admin -- identity create-users)",
  configuration:
    "needs settings of its own for the service (in-process only; a deployment's are its operator's, and the test would spend the deployment's limits on the suite's address)",
  corsOrigin: "needs an origin the deployment lists in CORS_ORIGINS: name it in CONFORMANCE_REPOSITORY_CORS_ORIGIN",
  privateWebhookTargets:
    "the deployment allows private webhook targets (WEBHOOK_ALLOW_PRIVATE_TARGETS), so there is no refusal of internal addresses to check",
  registrationBudget: "counts one client address's registrations from zero (a deployment's address has spent some on the run's own users)",
} as const;

export function skipOnDeployment(ctx: TestContext, reason: string): never {
  ctx.task.meta.skipReason = reason;
  return ctx.skip(`cannot run against a deployment: ${reason}`);
}

/**
 * The same from a helper that has no test context (a fixture that finds out on the way): skips the
 * running test with `reason`. Outside a test (a beforeAll) there is nothing to skip: it throws the
 * reason, and the runner reports the file's tests "not run" with it.
 */
export function skipRunningTest(reason: string): never {
  const test = TestRunner.getCurrentTest();
  if (!test) throw new Error(`cannot run against this deployment: ${reason}`);
  test.meta.skipReason = reason;
  return test.context.skip(`cannot run against this deployment: ${reason}`);
}

/** Whether the identity suite points at a deployment. */
export const identityOnDeployment = (): boolean => Boolean(process.env.CONFORMANCE_IDENTITY_URL);

/** For files that cannot run against a deployment at all: every test is skipped with `reason` (call at the top level). */
export function skipFileOnDeployment(onDeployment: boolean, reason: string): void {
  beforeEach((ctx) => {
    if (onDeployment) skipOnDeployment(ctx, reason);
  });
}

/**
 * A registration the deployment refused with 429 (its registration limit) is not the test's failure:
 * the test that needed it is skipped with the reason (in a beforeAll the file does not start, and
 * says why). Anything else, and anything in-process, is the caller's to check.
 */
export function skipWhenRegistrationRefused(target: { service?: unknown }, status: number, problem?: unknown): void {
  if (status !== 429 || target.service) return;
  const detail = (problem as { detail?: string } | undefined)?.detail;
  skipRunningTest(`${NEEDS.registrationLimit}${detail ? ` (the deployment said: ${detail})` : ""}`);
}
