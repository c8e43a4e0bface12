/**
 * One identity service process for the webhook crash test (test/webhooks/crash.test.ts). Started as
 * a real child process and killed with SIGKILL by the test.
 *
 *   node --import tsx test/webhooks/crash-child.ts seed <receiverUrl> <events>   # org, app, webhook, then <events> user events
 *   node --import tsx test/webhooks/crash-child.ts run                           # just dispatch
 *
 * Configuration comes from the environment (DATA_DIR or DATABASE_URL, WEBHOOK_*). Prints one JSON
 * line per milestone on stdout.
 */
import { randomUUID } from "node:crypto";
import { systemClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import { createLogger } from "../../server/logger.ts";
import { createIdentityService } from "../../handlers/identity/service.ts";
import { createOrganizationWithAdmin } from "../../handlers/identity/domain/accounts/bootstrap.ts";

const [mode, receiverUrl, count] = process.argv.slice(2);
const config = loadConfig(process.env);
const service = await createIdentityService(config, systemClock, createLogger(config.LOG_LEVEL));
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
process.on("SIGTERM", () => void service.close().then(() => process.exit(0)));

if (mode === "seed") {
  const { ctx } = service;
  const { webhooks } = service.deps;
  const { organization } = await createOrganizationWithAdmin(ctx.storage, systemClock, {
    organizationName: "Crash test",
    email: "crash@example.com",
    password: "crash-test-password",
    firstName: "Crash",
    lastName: "Test",
  });
  const now = new Date().toISOString();
  const appId = randomUUID();
  await ctx.storage.applications.insert({
    id: appId,
    organization_id: organization.id,
    name: "Crash app",
    client_id: `crash-${appId}`,
    client_type: "public",
    redirect_uris: '["http://localhost/cb"]',
    allowed_scopes: '["openid"]',
    enabled_providers: "[]",
    branding: "{}",
    first_party: false,
    created_at: now,
    updated_at: now,
  });
  await webhooks.manage.create(organization.id, appId, {
    url: receiverUrl!,
    events: ["user.created"],
    maxRetries: 10,
    retryDelaySeconds: 1,
  });
  say({ webhook: true });
  const total = Number(count);
  // Events are published the way the service does (in the change's transaction), 100 per transaction.
  for (let seq = 0; seq < total; seq += 100) {
    await service.db.transaction(async (trx) => {
      for (let i = seq; i < Math.min(total, seq + 100); i++) {
        await ctx.events.publish(trx, {
          type: "user.created",
          applicationIds: [appId],
          data: { userId: randomUUID(), email: `u${i}@example.com`, firstName: "U", lastName: String(i), seq: i },
        });
      }
    });
  }
  say({ seeded: total });
}
say({ ready: true, pid: process.pid });
