/**
 * `npm start` with identity and the email service in one process: identity sends its mail through
 * that email service with no configuration (X-ID-MAIL-4). Unless IDENTITY_MAIL_API_KEY is set, a
 * sending-only key is made at each start through the email service's own API-key functions, and the
 * keys made at earlier starts are revoked. It is a test key (mail kept by the email service's
 * simulator, and shown in identity's local mailbox) unless the email service can let mail leave
 * (EMAIL_SMTP_URL or EMAIL_TRANSPORT=sink): then a live one.
 */
import type { Logger } from "pino";
import type { Clock } from "../server/clock.ts";
import { openDatabase } from "../server/storage/db.ts";
import { emailListener } from "../handlers/email/config.ts";
import { createApiKeys } from "../handlers/email/domain/api-keys.ts";
import { createEmailStorage } from "../handlers/email/storage/index.ts";
import { migrations as emailMigrations } from "../handlers/email/storage/migrations/index.ts";
import type { Config } from "./load-config.ts";

/** The name of the keys made at start: those of earlier starts are found, and revoked, by it. */
export const IDENTITY_KEY_NAME = "identity mail (made at start)";

/** `config` with identity's email-service settings filled in, when both services run here and the operator set no key. */
export async function withIdentityMailKey(config: Config, services: string[], clock: Clock, logger: Logger): Promise<Config> {
  if (!services.includes("identity") || !services.includes("email")) return config;
  if (config.IDENTITY_MAIL_TRANSPORT !== "email-service" || config.IDENTITY_MAIL_API_KEY) return config;
  const db = await openDatabase({
    service: "email",
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    migrations: emailMigrations,
  });
  try {
    const keys = createApiKeys(createEmailStorage(db).apiKeys, clock);
    const test = !config.EMAIL_SMTP_URL && config.EMAIL_TRANSPORT !== "sink";
    const { row, key } = await keys.create({ name: IDENTITY_KEY_NAME, permission: "sending_access", test });
    // Earlier starts' keys, seen as a live key of the account sees every key (X-EM-27).
    const owner = { apiKeyId: row.id, permission: "full_access" as const, test: false };
    for (let page = 1; ; page++) {
      const { items } = await keys.list(owner, page, 100);
      for (const old of items) if (old.name === IDENTITY_KEY_NAME && old.id !== row.id) await keys.revoke(owner, old.id);
      if (items.length < 100) break;
    }
    const { port } = emailListener(config);
    const host = config.HOST === "0.0.0.0" || config.HOST === "::" ? "127.0.0.1" : config.HOST;
    const url =
      config.IDENTITY_MAIL_EMAIL_SERVICE_URL ?? config.EMAIL_PUBLIC_URL ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
    logger.info({ mode: row.mode, url }, "identity sends its mail through the email service of this process");
    return { ...config, IDENTITY_MAIL_API_KEY: key, IDENTITY_MAIL_EMAIL_SERVICE_URL: url };
  } finally {
    await db.destroy();
  }
}
