/**
 * The email service's configuration section: its listener, the relay and the domains mail leaves
 * from, the inbound listener for reports, tracking, sending limits, DKIM and retention. The values
 * each part of the service is given are derived here too, so that nothing below service.ts reads a
 * variable.
 */
import { z } from "zod";
import {
  defineSection,
  type Parsed,
  port,
  retentionSeconds,
  rule,
  type RuleValues,
  seconds,
  variable,
} from "../../server/config-schema.ts";
import { listenerOf, listenerVariables, type PlatformConfig, type WebhookSettings, webhookSettingsOf } from "../../server/config.ts";
import { dkimVariableProblems } from "./mail/dkim.ts";
import type { EmailRetentionPeriods } from "./storage/retention-rules.ts";

/** The Idempotency-Key window (IDEMPOTENCY_WINDOW_MS, domain/messages.ts): a message, which its key follows, must outlive it. */
const IDEMPOTENCY_WINDOW_SECONDS = 24 * 3600;

const emailVariables = {
  ...listenerVariables(
    "EMAIL",
    "email",
    3003,
    "the base of the links it publishes, and of the open pixel and click redirects unless EMAIL_TRACKING_BASE_URL says otherwise.",
  ),
  EMAIL_SMTP_URL: variable(
    z
      .string()
      .regex(/^smtps?:\/\/[^\s]+$/, "must be an smtp:// or smtps:// URL")
      .optional(),
    {
      description:
        "The outbound relay: `smtp://user:pass@host:587` (STARTTLS when offered; `?requireTLS=true` insists) or " +
        "`smtps://user:pass@host:465`. Unset, only `simulator.test` addresses (and test keys) can be sent, unless EMAIL_TRANSPORT=sink.",
      defaultText: "unset (simulator only)",
      secret: true,
      envGroup: "email",
      example: "smtps://relay-user:CHANGE-ME@smtp.example.com:465",
    },
  ),
  EMAIL_TRANSPORT: variable(z.enum(["sink"]).optional(), {
    description:
      "`sink`: accept every copy not for the simulator as Delivered without sending it. For development only, never the default; " +
      "excludes EMAIL_SMTP_URL.",
  }),
  EMAIL_SENDING_DOMAINS: variable(
    z
      .string()
      .default("")
      .transform((v) =>
        v
          .split(",")
          .map((d) => d.trim().toLowerCase())
          .filter(Boolean),
      ),
    {
      description: "Domains `from` may use for mail that leaves the simulator, comma-separated; the DKIM domain counts too.",
      defaultText: "none",
      envGroup: "email",
      example: "example.com",
    },
  ),
  EMAIL_BOUNCE_DOMAIN: variable(
    z
      .string()
      .regex(/^[A-Za-z0-9.-]+$/, "must be a domain name")
      .optional(),
    {
      description:
        "Domain of the VERP return paths (`bounces+<token>@<domain>`); its MX must reach the inbound listener (EMAIL_INBOUND_SMTP_PORT).",
      defaultText: "`bounces.<first sending domain>`, else `localhost`",
      envGroup: "email",
      example: "bounces.example.com",
    },
  ),
  EMAIL_INBOUND_SMTP_PORT: variable(port.default(2525), {
    description: "Port of the inbound SMTP listener that takes bounce reports (DSN) and complaints (ARF), on HOST; 0 = any free port.",
  }),
  EMAIL_INBOUND_MAX_SESSIONS_PER_PEER: variable(z.coerce.number().int().min(1).max(100).default(10), {
    description:
      "Sessions one peer (an IPv4 address, an IPv6 /64) may hold on the inbound listener at once; the next is answered 421 " +
      "(X-EM-17). Raise it only when reporting MTAs reach the listener through one address (a TCP balancer).",
  }),
  EMAIL_TRACKING_BASE_URL: variable(z.string().url().optional(), {
    description: "Public base URL of the open pixel and click redirects; a separate HTTPS origin keeps the API's own origin private.",
    defaultText: "EMAIL_PUBLIC_URL",
  }),
  EMAIL_WEBHOOK_TIMEOUT_MS: variable(z.coerce.number().int().min(100).max(60_000).default(5000), {
    description: "The email service's webhooks: no 2xx answer within this many milliseconds is a failed attempt (the contract's 5 s).",
  }),
  EMAIL_SEND_CONCURRENCY: variable(z.coerce.number().int().min(1).max(500).default(20), {
    description: "Copies in flight to their transports at once per instance.",
  }),
  EMAIL_RATE_LIMIT_PER_SECOND: variable(z.coerce.number().int().min(0).max(100_000).default(100), {
    description:
      "Sends per second per API key and instance before 429 `rate_limited` (X-EM-19: Stripe's default per account); 0 = no limit.",
  }),
  EMAIL_SIMULATOR_REPORT_DELAY_MS: variable(z.coerce.number().int().min(0).max(600_000).default(1000), {
    description: "How long the simulator waits before it mails an asynchronous bounce or complaint report.",
  }),
  EMAIL_DKIM_DOMAIN: variable(z.string().optional(), {
    description:
      "DKIM signing of every copy sent over SMTP: the d= domain, a sending domain (DMARC alignment). With EMAIL_DKIM_SELECTOR " +
      "and EMAIL_DKIM_PRIVATE_KEY_FILE: all three or none.",
    defaultText: "unset (no DKIM)",
    envGroup: "email",
    example: "example.com",
  }),
  EMAIL_DKIM_SELECTOR: variable(z.string().optional(), {
    description: "DKIM: the s= selector; the public key is published at `<selector>._domainkey.<domain>`.",
    envGroup: "email",
    example: "mail1",
  }),
  EMAIL_DKIM_PRIVATE_KEY_FILE: variable(z.string().optional(), {
    description:
      "DKIM: path of the PEM private key (RSA, at least 1024 bits, 2048 advised), read at start; a file keeps the key out of the " +
      "environment. `npm run admin -- email dkim-keygen <domain> <selector> <file>` makes one and prints its DNS record.",
    envGroup: "email",
    example: "/etc/platform/dkim.pem",
  }),
  EMAIL_RETENTION_MESSAGES_SECONDS: variable(retentionSeconds.default(90 * 24 * 3600), {
    description:
      "A message whose copies all have their outcome is deleted this long after it was sent, with its copies, timeline, " +
      "attachments, tracked links and Idempotency-Key (X-EM-25); at least 86400, the key's window.",
  }),
  EMAIL_RETENTION_WEBHOOK_HISTORY_SECONDS: variable(retentionSeconds.default(30 * 24 * 3600), {
    description: "Webhook attempts, finished deliveries and events older than this are deleted.",
  }),
  EMAIL_RETENTION_INTERVAL_SECONDS: variable(seconds.max(24 * 3600).default(300), {
    description: "How often the retention purge runs.",
  }),
  EMAIL_RETENTION_BATCH_ROWS: variable(z.coerce.number().int().min(1).max(10_000).default(10), {
    description:
      "Messages (or other rows) per DELETE of the purge: each batch is one short transaction and the purge yields between batches.",
  }),
};

export const emailConfig = defineSection({
  title: "Email service",
  summary: "Sending through a relay or the simulator, bounce and complaint reports, tracking, suppressions and webhooks.",
  variables: emailVariables,
  rules: [
    rule<RuleValues<typeof emailVariables>>(
      ["EMAIL_TRANSPORT", "EMAIL_SMTP_URL"],
      (c) =>
        c.EMAIL_TRANSPORT === "sink" &&
        Boolean(c.EMAIL_SMTP_URL) &&
        "sink and EMAIL_SMTP_URL exclude each other: choose the relay or the development sink",
    ),
    // A purged message takes its Idempotency-Key along: a retry within the key's 24 hours would send again.
    rule<RuleValues<typeof emailVariables>>(
      ["EMAIL_RETENTION_MESSAGES_SECONDS"],
      (c) =>
        c.EMAIL_RETENTION_MESSAGES_SECONDS < IDEMPOTENCY_WINDOW_SECONDS &&
        `must be at least ${IDEMPOTENCY_WINDOW_SECONDS} (the 24-hour Idempotency-Key window)`,
    ),
    {
      // All three or none, and well-formed; the key file itself is read when the service starts.
      variables: ["EMAIL_DKIM_DOMAIN", "EMAIL_DKIM_SELECTOR", "EMAIL_DKIM_PRIVATE_KEY_FILE"],
      check(c, report) {
        for (const { variable, problem } of dkimVariableProblems(c)) report(variable, problem);
      },
    },
  ],
});

/** What the email service reads: the platform's variables and its own. */
export type EmailServiceConfig = PlatformConfig & Parsed<typeof emailVariables>;

export const emailListener = (config: EmailServiceConfig) => listenerOf(config, "EMAIL");

/** The email webhooks' engine: the platform's settings with the service's own timeout. */
export const emailWebhookSettingsOf = (config: EmailServiceConfig): WebhookSettings => ({
  ...webhookSettingsOf(config),
  timeoutMs: config.EMAIL_WEBHOOK_TIMEOUT_MS,
});

/** The retention purge's periods (storage/retention-rules.ts), its batch size and its interval. */
export function emailRetentionOf(config: EmailServiceConfig): { periods: EmailRetentionPeriods; batchRows: number; intervalMs: number } {
  return {
    periods: {
      messagesSeconds: config.EMAIL_RETENTION_MESSAGES_SECONDS,
      webhookHistorySeconds: config.EMAIL_RETENTION_WEBHOOK_HISTORY_SECONDS,
    },
    batchRows: config.EMAIL_RETENTION_BATCH_ROWS,
    intervalMs: config.EMAIL_RETENTION_INTERVAL_SECONDS * 1000,
  };
}

/** Domains of the VERP return paths: EMAIL_BOUNCE_DOMAIN, else `bounces.` and the first sending domain, else `localhost`. */
export function bounceDomainOf(config: EmailServiceConfig): string {
  const first = config.EMAIL_SENDING_DOMAINS[0];
  return (config.EMAIL_BOUNCE_DOMAIN ?? (first ? `bounces.${first}` : "localhost")).toLowerCase();
}
