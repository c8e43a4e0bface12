/**
 * The identity service's configuration section: its listener, how it keys one-time secrets, what
 * its retention purge keeps, and the social providers of the deployment. The values each part of
 * the service is given are derived here too, so that nothing below service.ts reads a variable.
 */
import { z } from "zod";
import {
  defineSection,
  flag,
  type Parsed,
  retentionSeconds,
  rule,
  type RuleValues,
  seconds,
  variable,
} from "../../server/config-schema.ts";
import { listenerOf, listenerVariables, type PlatformConfig } from "../../server/config.ts";
import type { SocialProviderConfig } from "./domain/accounts/providers.ts";
import type { IdentityRetentionPeriods } from "./storage/retention-rules.ts";
import type { MailTransportSettings } from "./mail/transports/index.ts";

/** The registration limit's window (REGISTRATIONS_PER_ADDRESS_PER_HOUR, domain/accounts/users.ts): its records must outlive it. */
const REGISTRATION_WINDOW_SECONDS = 3600;

const providerId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, "id: lower-case letters, digits and '-', at most 32");
const httpUrl = z
  .string()
  .url()
  .regex(/^https?:\/\//, "must be an http(s) URL");
const providerCommon = { id: providerId, name: z.string().min(1).max(100), clientId: z.string().min(1), clientSecret: z.string().min(1) };

/** One entry of IDENTITY_SOCIAL_PROVIDERS: any OpenID Connect provider by its issuer, or a plain OAuth 2.0 one (GitHub) by its endpoints. */
export const socialProviderSchema = z.discriminatedUnion("type", [
  z
    .object({ ...providerCommon, type: z.literal("oidc"), issuer: httpUrl, scope: z.string().min(1).default("openid email profile") })
    .strict(),
  z
    .object({
      ...providerCommon,
      type: z.literal("oauth2"),
      authorizationEndpoint: httpUrl,
      tokenEndpoint: httpUrl,
      userinfoEndpoint: httpUrl,
      scope: z.string().min(1),
    })
    .strict(),
]) satisfies z.ZodType<SocialProviderConfig>;

export const socialProvidersSchema = z
  .array(socialProviderSchema)
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, "provider ids must be unique");

const identityVariables = {
  ...listenerVariables(
    "IDENTITY",
    "identity",
    3001,
    "the `iss` of its tokens, the origin of its hosted pages and the base of every link it publishes; its cookies are `Secure` exactly when it is `https`.",
  ),
  IDENTITY_TOKEN_KEYS: variable(z.enum(["hashed", "time-ordered"]).default("hashed"), {
    description:
      "How new authorization codes and refresh tokens are keyed in storage: `hashed`, by their SHA-256, as every earlier version " +
      "does; `time-ordered`, by their issue time (which then begins the code or token) and their SHA-256, so that their indexes " +
      "grow at one end and the token exchange costs the same at millions of rows. Both kinds are always accepted. Set " +
      "`time-ordered` once no instance of an earlier version runs and no roll back to one is planned: those accept only `hashed` ones.",
  }),
  IDENTITY_RETENTION_CODES_SECONDS: variable(retentionSeconds.default(24 * 3600), {
    description:
      "Authorization codes, pending authorization requests and social sign-in states are deleted this long after they expire " +
      "(a code replayed within it still revokes what it produced).",
  }),
  IDENTITY_RETENTION_REFRESH_TOKENS_SECONDS: variable(retentionSeconds.default(24 * 3600), {
    description:
      "Refresh tokens, rotated ones included (their reuse revokes the family until they expire), are deleted this long after " +
      "they expire; grants (refresh families) this long after everything issued from them ended.",
  }),
  IDENTITY_RETENTION_REVOKED_TOKENS_SECONDS: variable(retentionSeconds.default(3600), {
    description: "A revoked access token's row is deleted this long after the token itself expires.",
  }),
  IDENTITY_RETENTION_SESSIONS_SECONDS: variable(retentionSeconds.default(24 * 3600), {
    description: "Single sign-on sessions are deleted this long after they expire.",
  }),
  IDENTITY_RETENTION_THROTTLE_SECONDS: variable(retentionSeconds.default(24 * 3600), {
    description:
      "Failed sign-ins, registration attempts and password reset requests are deleted after this long; at least LOGIN_WINDOW_SECONDS and 3600 (the windows that count them).",
  }),
  IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS: variable(retentionSeconds.default(30 * 24 * 3600), {
    description: "Webhook attempts, finished deliveries and events older than this are deleted.",
  }),
  IDENTITY_RETENTION_AUDIT_SECONDS: variable(retentionSeconds.default(90 * 24 * 3600), {
    description: "Audit log events (sign-ins, sign-outs, account and admin changes) are deleted this long after they happened.",
  }),
  IDENTITY_RETENTION_INTERVAL_SECONDS: variable(seconds.max(24 * 3600).default(300), {
    description: "How often the retention purge runs.",
  }),
  IDENTITY_RETENTION_BATCH_ROWS: variable(z.coerce.number().int().min(1).max(10_000).default(10), {
    description:
      "Rows per DELETE of the purge: each batch is one short transaction and the purge yields between batches, so that it never " +
      "holds the database's writer for long.",
  }),
  IDENTITY_SOCIAL_PROVIDERS: variable(
    z
      .string()
      .default("[]")
      .transform((text, c) => {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          c.addIssue({ code: "custom", message: "must be a JSON array of providers" });
          return z.NEVER;
        }
        const parsed = socialProvidersSchema.safeParse(value);
        if (!parsed.success) {
          const why = parsed.error.issues.map((i) => `[${i.path.join(".")}] ${i.message}`).join("; ");
          c.addIssue({ code: "custom", message: `invalid providers: ${why}` });
          return z.NEVER;
        }
        return parsed.data;
      }),
    {
      description:
        'JSON array of the upstream sign-in providers applications may enable by `id`: `{"id", "name", "type": "oidc", "issuer", ' +
        '"clientId", "clientSecret"}` (any OpenID Connect provider; `scope` defaults to `openid email profile`) or `{"id", "name", ' +
        '"type": "oauth2", "authorizationEndpoint", "tokenEndpoint", "userinfoEndpoint", "clientId", "clientSecret", "scope"}`.',
      defaultText: "`[]` (none)",
      secret: true,
    },
  ),
  IDENTITY_MAIL_TRANSPORT: variable(z.enum(["email-service", "smtp"]).default("email-service"), {
    description:
      "How identity sends its mail (password resets, address verification): `email-service`, the platform's email service " +
      "(IDENTITY_MAIL_EMAIL_SERVICE_URL and IDENTITY_MAIL_API_KEY; `npm start` running both services wires them itself), or " +
      "`smtp`, any relay at IDENTITY_MAIL_SMTP_URL. Until the chosen transport is configured, messages are queued and kept, not sent.",
  }),
  IDENTITY_MAIL_EMAIL_SERVICE_URL: variable(httpUrl.optional(), {
    description: "The email service's base URL for `IDENTITY_MAIL_TRANSPORT=email-service` (its `POST /v1/emails`).",
    defaultText: "the email service of the same process (`npm start`), else unset",
    envGroup: "email",
    example: "https://email.example.com",
  }),
  IDENTITY_MAIL_API_KEY: variable(z.string().min(1).optional(), {
    description:
      "An email service API key (`em_live_…`) identity sends with. Unset while `npm start` runs the email service in the same " +
      "process: a key is made at each start (a test key, mail kept by the simulator, unless EMAIL_SMTP_URL or EMAIL_TRANSPORT says mail can leave).",
    defaultText: "unset",
    secret: true,
    envGroup: "email",
    example: "em_live_CHANGE-ME",
  }),
  IDENTITY_MAIL_SMTP_URL: variable(
    z
      .string()
      .regex(/^smtps?:\/\/[^\s]+$/, "must be an smtp:// or smtps:// URL")
      .optional(),
    {
      description:
        "The relay for `IDENTITY_MAIL_TRANSPORT=smtp`: `smtp://user:pass@host:587` (STARTTLS when offered) or `smtps://user:pass@host:465`.",
      defaultText: "unset",
      secret: true,
    },
  ),
  IDENTITY_MAIL_FROM: variable(z.string().email().default("no-reply@identity.localhost"), {
    description:
      "The sender address of identity's mail. Through the email service its domain must be one of EMAIL_SENDING_DOMAINS for mail that leaves the simulator.",
    envGroup: "email",
    example: "no-reply@example.com",
  }),
  IDENTITY_MAIL_FROM_NAME: variable(
    z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^\r\n]+$/)
      .default("Identity"),
    {
      description: "The sender's display name of identity's mail.",
    },
  ),
  IDENTITY_MAILBOX: variable(z.enum(["auto", "off"]).default("auto"), {
    description:
      "`auto`: the local mailbox page (`/dev/mailbox`: every message identity queued, with its bodies) is served exactly when " +
      "IDENTITY_PUBLIC_URL is `http` on a loopback host (localhost, 127.0.0.0/8, [::1]); never on any other deployment. `off`: never.",
  }),
  IDENTITY_RETENTION_MAIL_SECONDS: variable(retentionSeconds.default(7 * 24 * 3600), {
    description: "Sent and failed messages of identity's mail outbox are deleted this long after they finished.",
  }),
  IDENTITY_PAR_LIFETIME_SECONDS: variable(seconds.max(600).default(60), {
    description:
      "How long a pushed authorization request (`POST /oauth/par`, RFC 9126) can be used at the authorization endpoint: " +
      "the `expires_in` of its `request_uri` (X-ID-PAR-3).",
  }),
  IDENTITY_REQUIRE_PUSHED_AUTHORIZATION_REQUESTS: variable(flag("false"), {
    description:
      "`true`: every application must push its authorization requests (`POST /oauth/par`); a plain authorization request is " +
      "refused (X-ID-PAR-5), and discovery says `require_pushed_authorization_requests: true`.",
  }),
  IDENTITY_DPOP_NONCE_SECONDS: variable(z.coerce.number().int().min(0).max(3600).default(0), {
    description:
      "DPoP server nonces (RFC 9449 §8): 0, the default, requires none (a proof's freshness is its 60-second `iat` window and " +
      "its replay record). Above 0, every DPoP proof must carry the server's nonce, handed out in the `DPoP-Nonce` header and " +
      "rotated every this many seconds (the previous one is still accepted); a proof without it is answered `use_dpop_nonce`.",
  }),
};

export const identityConfig = defineSection({
  title: "Identity service",
  summary: "The OAuth 2.0 and OpenID Connect server, its accounts and its webhooks.",
  variables: identityVariables,
  rules: [
    // Purging a failure that its window still counts would lift a lockout early.
    rule<RuleValues<typeof identityVariables>>(["IDENTITY_RETENTION_THROTTLE_SECONDS", "LOGIN_WINDOW_SECONDS"], (c) => {
      const floor = Math.max(c.LOGIN_WINDOW_SECONDS, REGISTRATION_WINDOW_SECONDS);
      return (
        c.IDENTITY_RETENTION_THROTTLE_SECONDS < floor &&
        `must be at least ${floor} (LOGIN_WINDOW_SECONDS and the 1-hour registration window)`
      );
    }),
    // Chosen but unconfigured would leave every message queued: say so at start.
    rule<RuleValues<typeof identityVariables>>(
      ["IDENTITY_MAIL_SMTP_URL", "IDENTITY_MAIL_TRANSPORT"],
      (c) => c.IDENTITY_MAIL_TRANSPORT === "smtp" && !c.IDENTITY_MAIL_SMTP_URL && "is required when IDENTITY_MAIL_TRANSPORT=smtp",
    ),
  ],
});

/** What the identity service reads: the platform's variables and its own. */
export type IdentityServiceConfig = PlatformConfig & Parsed<typeof identityVariables>;

export const identityListener = (config: IdentityServiceConfig) => listenerOf(config, "IDENTITY");

/** The retention purge's periods (storage/retention-rules.ts), its batch size and its interval. */
export function identityRetentionOf(config: IdentityServiceConfig): {
  periods: IdentityRetentionPeriods;
  batchRows: number;
  intervalMs: number;
} {
  return {
    periods: {
      codesSeconds: config.IDENTITY_RETENTION_CODES_SECONDS,
      refreshTokensSeconds: config.IDENTITY_RETENTION_REFRESH_TOKENS_SECONDS,
      revokedTokensSeconds: config.IDENTITY_RETENTION_REVOKED_TOKENS_SECONDS,
      sessionsSeconds: config.IDENTITY_RETENTION_SESSIONS_SECONDS,
      throttleSeconds: config.IDENTITY_RETENTION_THROTTLE_SECONDS,
      knownAddressSeconds: config.LOGIN_KNOWN_ADDRESS_SECONDS,
      webhookHistorySeconds: config.IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS,
      mailSeconds: config.IDENTITY_RETENTION_MAIL_SECONDS,
      auditSeconds: config.IDENTITY_RETENTION_AUDIT_SECONDS,
    },
    batchRows: config.IDENTITY_RETENTION_BATCH_ROWS,
    intervalMs: config.IDENTITY_RETENTION_INTERVAL_SECONDS * 1000,
  };
}

/** Loopback hosts: a public URL on one of them is a deployment nobody else can reach. */
const LOOPBACK = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Whether the deployment is local: IDENTITY_PUBLIC_URL is plain http on a loopback host (X-ID-MAIL-5). */
export function isLocalDeployment(config: IdentityServiceConfig): boolean {
  const url = new URL(identityListener(config).publicUrl);
  return url.protocol === "http:" && LOOPBACK.test(url.hostname);
}

/** How identity's mail is sent, and whether the local mailbox is served (handlers/identity/mail/). */
export type IdentityMailSettings = MailTransportSettings & { mailboxEnabled: boolean };

export function identityMailOf(config: IdentityServiceConfig): IdentityMailSettings {
  const common = {
    from: config.IDENTITY_MAIL_FROM,
    fromName: config.IDENTITY_MAIL_FROM_NAME,
    mailboxEnabled: config.IDENTITY_MAILBOX === "auto" && isLocalDeployment(config),
  };
  if (config.IDENTITY_MAIL_TRANSPORT === "smtp")
    return {
      ...common,
      transport: config.IDENTITY_MAIL_SMTP_URL
        ? { kind: "smtp", url: config.IDENTITY_MAIL_SMTP_URL }
        : { kind: "unconfigured", missing: "IDENTITY_MAIL_SMTP_URL" },
    };
  const url = config.IDENTITY_MAIL_EMAIL_SERVICE_URL;
  const apiKey = config.IDENTITY_MAIL_API_KEY;
  if (!url || !apiKey)
    return { ...common, transport: { kind: "unconfigured", missing: !url ? "IDENTITY_MAIL_EMAIL_SERVICE_URL" : "IDENTITY_MAIL_API_KEY" } };
  return { ...common, transport: { kind: "email-service", url, apiKey } };
}
