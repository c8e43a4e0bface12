/**
 * `npm run admin -- identity send-test-mail <address>` (X-ID-MAIL-6): the operator's check of
 * identity's mail settings, as Keycloak's "Test connection". The message is queued in identity's
 * outbox and sent at once through the transport this shell's configuration chooses; the outcome is
 * printed. Without a configured transport it stays queued, for a running service that has one.
 */
import { systemClock } from "../server/clock.ts";
import { createLogger } from "../server/logger.ts";
import { createMailArea } from "../handlers/identity/domain/mail/mail-area.ts";
import { identityMailOf } from "../handlers/identity/config.ts";
import { mailSettingsOf } from "../handlers/identity/service.ts";
import { createIdentityStorage } from "../handlers/identity/storage/index.ts";
import type { AdminContext } from "./admin.ts";

export async function sendTestMail(address: string, ctx: AdminContext): Promise<number> {
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(address)) {
    console.error(`"${address}" is not an email address.`);
    return 2;
  }
  const logger = createLogger("silent");
  const chosen = identityMailOf(ctx.config).transport;
  return ctx.withServiceDb("identity", async (db) => {
    const mail = createMailArea({ clock: systemClock, logger, storage: createIdentityStorage(db) }, mailSettingsOf(ctx.config, logger));
    try {
      const outcome = await mail.sendTestMessage(address);
      if (chosen.kind === "unconfigured") {
        console.error(
          `Queued test message ${outcome.id}, not sent from here: ${chosen.missing} is not set. A running identity service with mail settings sends it.`,
        );
        return 1;
      }
      if (outcome.sent) {
        console.log(`Sent test message ${outcome.id} to ${address} through ${chosen.kind}.`);
        return 0;
      }
      console.error(`Test message ${outcome.id} was not sent (${outcome.status}): ${outcome.error ?? "no answer"}`);
      if (outcome.status === "pending") console.error("It stays queued: the identity service tries it again later.");
      return 1;
    } finally {
      await mail.stop();
    }
  });
}
