/**
 * The one configuration object. Every option comes from an environment variable, has a default
 * that works with no configuration, and is validated at start with a clear message (README has
 * the same table).
 */
import { z } from "zod";
import { parseTrustProxy } from "./http/trusted-proxy.ts";
import { originProblem } from "./origins.ts";
import { parseEncryptionKey } from "./security/key-encryption.ts";
import { minimumActivationDelaySeconds } from "./keys/schedule.ts";

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().min(1);
/** A retention period: 0 (delete as soon as a row stops mattering) up to ten years. */
const retention = z.coerce
  .number()
  .int()
  .min(0)
  .max(10 * 365 * 24 * 3600);
/** The email service's Idempotency-Key window: a message (which its key follows) must outlive it. */
const IDEMPOTENCY_WINDOW_SECONDS = 24 * 3600;
/** The registration limit's window (accounts area): throttle records must outlive it. */
const REGISTRATION_WINDOW_SECONDS = 3600;
/** A key encryption key: 32 bytes in base64, base64url or hex. */
const encryptionKey = z.string().transform((text, ctx) => {
  const key = parseEncryptionKey(text);
  if (!key) {
    ctx.addIssue({ code: "custom", message: "must be 32 bytes in base64, base64url or hex (openssl rand -base64 32)" });
    return z.NEVER;
  }
  return key;
});

// --- Identity, accounts area: IDENTITY_SOCIAL_PROVIDERS entries. ---
const providerId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, "id: lower-case letters, digits and '-', at most 32");
const httpUrl = z
  .string()
  .url()
  .regex(/^https?:\/\//, "must be an http(s) URL");
const providerCommon = { id: providerId, name: z.string().min(1).max(100), clientId: z.string().min(1), clientSecret: z.string().min(1) };
/** One upstream provider: any OpenID Connect provider by its issuer, or a plain OAuth 2.0 one (GitHub) by its endpoints. */
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
]);
export const socialProvidersSchema = z
  .array(socialProviderSchema)
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, "provider ids must be unique");
export type SocialProviderConfig = z.infer<typeof socialProviderSchema>;

const schema = z
  .object({
    /** Interface the services listen on. */
    HOST: z.string().min(1).default("127.0.0.1"),
    /** Ports of the three services. */
    IDENTITY_PORT: port.default(3001),
    REPOSITORY_PORT: port.default(3002),
    EMAIL_PORT: port.default(3003),
    /** Public base URLs (the `iss` of tokens and links in pages); default http://HOST:PORT. */
    IDENTITY_PUBLIC_URL: z.string().url().optional(),
    REPOSITORY_PUBLIC_URL: z.string().url().optional(),
    EMAIL_PUBLIC_URL: z.string().url().optional(),
    /** Folder of the SQLite files (one per service). */
    DATA_DIR: z.string().min(1).default("./data"),
    /** postgres://… to use PostgreSQL (one schema per service); empty for SQLite in DATA_DIR. */
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL (leave unset for SQLite)")
      .optional(),
    /** pino level. */
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** Largest accepted request body, in bytes (a larger one is 413). */
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(65536),
    /**
     * Graceful shutdown (server/lifecycle.ts): on SIGTERM or SIGINT, the longest wait, from the
     * signal, for requests in flight and then the dispatchers before the process exits anyway (with
     * code 1). Keep it under the orchestrator's kill timeout (Kubernetes: 30 s).
     */
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(25_000),
    /**
     * After SIGTERM, how long the ports stay open, serving with `Connection: close`, while `/ready`
     * answers 503, so that a balancer polling it (or Kubernetes, whose endpoints lag the signal) stops
     * sending before the port closes: a connection that reaches a closing port is reset. The default
     * is lightship's (Node's Kubernetes lifecycle library), one readiness period, capped at half of
     * SHUTDOWN_TIMEOUT_MS so that a short timeout set alone still leaves time to drain; set it to the
     * balancer's probe interval times its failure threshold. SIGINT (Ctrl-C) does not wait; 0 never does.
     */
    SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(600_000).optional(),
    /**
     * Our reverse proxies: a hop count, or a comma-separated list of their addresses and CIDRs
     * (server/http/trusted-proxy.ts). Only a trusted proxy's `X-Request-Id` is kept (X-API-12).
     * Unset (or 0): trust no one.
     */
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((v, ctx) => {
        try {
          return parseTrustProxy(v);
        } catch (err) {
          ctx.addIssue({ code: "custom", message: (err as Error).message });
          return z.NEVER;
        }
      }),
    /**
     * Which header our trusted proxies set about the client (server/http/forwarded.ts):
     * `x-forwarded` (X-Forwarded-For/-Proto/-Host: nginx, HAProxy, most cloud balancers) or
     * `forwarded` (RFC 7239). Only one is read: the proxy must set or append it, and a client's own
     * copy of the other would otherwise pass through unchecked.
     */
    PROXY_HEADER: z.enum(["x-forwarded", "forwarded"]).default("x-forwarded"),
    /** When set, `/metrics` answers only `Authorization: Bearer <this>` (X-API-11); unset, it is open like `/health`. */
    METRICS_TOKEN: z
      .string()
      .regex(/^[A-Za-z0-9\-._~+/]{16,256}$/, "16-256 characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 32)")
      .optional(),
    /**
     * Repository service: origins whose browser pages may call its API (X-RB-10), comma-separated,
     * each exactly as browsers send it (`https://app.example.com,http://localhost:5173`). Default
     * none: same-origin only. Identity decides per application (X-ID-CORS-2); email never (X-EM-26).
     */
    CORS_ORIGINS: z
      .string()
      .default("")
      .transform((value, ctx) => {
        const origins = value
          .split(",")
          .map((o) => o.trim())
          .filter(Boolean);
        for (const origin of origins) {
          const why = origin === "*" ? "`*` is not an origin: list each origin" : originProblem(origin);
          if (why) ctx.addIssue({ code: "custom", message: `${JSON.stringify(origin)} ${why}` });
        }
        return origins;
      }),
    /** Check every response against the OpenAPI document; a violation becomes a logged 500. On in tests. */
    VALIDATE_RESPONSES: z
      .enum(["true", "false"])
      .default("false")
      .transform((v) => v === "true"),
    /** Repository service: refresh token lifetime (seconds). */
    REPOSITORY_REFRESH_TTL_SECONDS: seconds.default(30 * 24 * 3600),
    /** Repository service: agent token lifetime (seconds). */
    REPOSITORY_AGENT_TTL_SECONDS: seconds.default(90 * 24 * 3600),
    // --- Signing keys, identity and repository (server/keys/). ---
    /**
     * 32 bytes (base64, base64url or 64 hex digits: `openssl rand -base64 32`) that seal the private
     * signing keys in the database. Unset: keys are stored plain. Setting it seals the stored keys at
     * the next start; without it, sealed keys cannot be read, so keep it as safe as the database.
     */
    KEY_ENCRYPTION_KEY: encryptionKey.optional(),
    /** While changing KEY_ENCRYPTION_KEY: the key before it, which still opens keys sealed under it (they are sealed again under the new one at start). */
    KEY_ENCRYPTION_KEY_PREVIOUS: encryptionKey.optional(),
    /** How often each instance reads its signing keys again, so a rotation reaches it without a restart. */
    SIGNING_KEY_REFRESH_SECONDS: seconds.max(3600).default(60),
    /** `rotate-keys`: how long a new key is published before it signs (at least 600, and SIGNING_KEY_REFRESH_SECONDS + 300 for the JWKS cache). */
    SIGNING_KEY_ACTIVATION_DELAY_SECONDS: seconds.max(30 * 24 * 3600).default(3600),
    // --- Password sign-in throttling, every service (server/security/sign-in-throttle.ts; X-ID-AZ-3/4, X-RB-6/9). ---
    /** Failed sign-ins for one account from one client address within LOGIN_WINDOW_SECONDS before that address is refused for that account (429); also where the account-wide slowdown starts. */
    LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).max(1000).default(10),
    /** Failed sign-ins from one client address (any accounts; IPv6 by /64) within LOGIN_WINDOW_SECONDS before it is refused (429). */
    LOGIN_ADDRESS_MAX_FAILURES: z.coerce.number().int().min(1).max(100_000).default(100),
    LOGIN_WINDOW_SECONDS: seconds.default(15 * 60),
    /** Longest wait the account-wide slowdown asks (1 s, 2 s, 4 s … up to this), from addresses the account has not signed in from. */
    LOGIN_BACKOFF_MAX_SECONDS: seconds.default(60),
    /** How long an address stays known to an account after a successful sign-in from it (known addresses are not slowed down). */
    LOGIN_KNOWN_ADDRESS_SECONDS: seconds.max(10 * 365 * 24 * 3600).default(30 * 24 * 3600),
    // --- Webhook delivery engine (server/webhooks): identity now, email next. ---
    /** No complete answer within this many milliseconds is a failed attempt (seed: 30 s). */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(30_000),
    /**
     * Internal targets (loopback, private, link-local, CGNAT, multicast…) are refused (SSRF guard)
     * unless allowed here: `true` allows all of them (a trusted network), or a comma-separated list
     * of addresses and CIDRs allows just those (the tests allow `127.0.0.1`). Default `false`.
     */
    WEBHOOK_ALLOW_PRIVATE_TARGETS: z
      .string()
      .default("false")
      .refine(
        (v) => v === "true" || v === "false" || v.split(",").every((e) => /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(e.trim())),
        "true, false or a comma-separated list of IPs/CIDRs",
      ),
    /** Webhook URLs must be https. Set `false` for plain-http receivers in local development. */
    WEBHOOK_REQUIRE_HTTPS: z
      .enum(["true", "false"])
      .default("true")
      .transform((v) => v === "true"),
    /** How long a claimed delivery stays reserved for its dispatcher; a dead process's claims are retried after it (raised to 2 × timeout + 1 s when shorter). */
    WEBHOOK_LEASE_SECONDS: seconds.max(3600).default(60),
    /** How often an idle dispatcher looks for due deliveries (new events also wake it at once). */
    WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(5).max(60_000).default(1000),
    /** Deliveries in flight at once per service instance. */
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(50),
    // --- Email service (handlers/email). ---
    /** The deployment's outbound relay: smtp://user:pass@host:587 (STARTTLS when offered; `?requireTLS=true` insists) or smtps://…:465. Unset: only simulator.test addresses (and test keys) can be sent, unless EMAIL_TRANSPORT=sink. */
    EMAIL_SMTP_URL: z
      .string()
      .regex(/^smtps?:\/\/[^\s]+$/, "must be an smtp:// or smtps:// URL")
      .optional(),
    /** `sink`: accept every non-simulator copy as Delivered without sending it (development only; never the default). */
    EMAIL_TRANSPORT: z.enum(["sink"]).optional(),
    /** Domains `from` may use for mail that leaves the simulator (comma-separated); the DKIM domain counts too. */
    EMAIL_SENDING_DOMAINS: z
      .string()
      .default("")
      .transform((v) =>
        v
          .split(",")
          .map((d) => d.trim().toLowerCase())
          .filter(Boolean),
      ),
    /** Domain of the VERP return paths (`bounces+<token>@<domain>`); its MX must reach the inbound listener. Default `bounces.<first sending domain>`, else `localhost`. */
    EMAIL_BOUNCE_DOMAIN: z
      .string()
      .regex(/^[A-Za-z0-9.-]+$/, "must be a domain name")
      .optional(),
    /** Port of the inbound SMTP listener for bounce reports (DSN) and complaints (ARF); 0 = any free port. */
    EMAIL_INBOUND_SMTP_PORT: port.default(2525),
    /**
     * Sessions one peer (IPv4 address, IPv6 /64) may hold on the inbound listener at once (X-EM-17);
     * raise it only when the listener sees reporting MTAs through one address (a TCP balancer).
     */
    EMAIL_INBOUND_MAX_SESSIONS_PER_PEER: z.coerce.number().int().min(1).max(100).default(10),
    /** Public base URL of the open pixel and click redirects (a separate HTTPS origin keeps the API private). Default EMAIL_PUBLIC_URL. */
    EMAIL_TRACKING_BASE_URL: z.string().url().optional(),
    /** Email webhooks: no 2xx within this many milliseconds is a failed attempt (contract: 5 s). */
    EMAIL_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
    /** Copies in flight to their transports at once per instance. */
    EMAIL_SEND_CONCURRENCY: z.coerce.number().int().min(1).max(500).default(20),
    /** Sends per second per API key and instance before 429 `rate_limited` (X-EM-19: Stripe's default per account); 0 = no limit. */
    EMAIL_RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(0).max(100_000).default(100),
    /** How long the simulator waits before mailing an asynchronous bounce or complaint report. */
    EMAIL_SIMULATOR_REPORT_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(1000),
    /** DKIM signing (all three or none): the d= domain, the selector, the PEM private key's path. `npm run admin -- email dkim-keygen` makes one. */
    EMAIL_DKIM_DOMAIN: z.string().optional(),
    EMAIL_DKIM_SELECTOR: z.string().optional(),
    EMAIL_DKIM_PRIVATE_KEY_FILE: z.string().optional(),
    // --- Email: retention (handlers/email/storage/retention-rules.ts). ---
    /** Messages (their copies, timeline, attachments and tracked links with them), once every copy has its outcome: kept this long after sending; at least the 24-hour Idempotency-Key window. */
    EMAIL_RETENTION_MESSAGES_SECONDS: retention.default(90 * 24 * 3600),
    /** Webhook history: attempts, finished deliveries and events older than this. */
    EMAIL_RETENTION_WEBHOOK_HISTORY_SECONDS: retention.default(30 * 24 * 3600),
    /** How often the purge runs. */
    EMAIL_RETENTION_INTERVAL_SECONDS: seconds.max(24 * 3600).default(300),
    /** Messages (or other rows) per DELETE: each batch is one short transaction, the purge yields between batches. */
    EMAIL_RETENTION_BATCH_ROWS: z.coerce.number().int().min(1).max(10_000).default(10),
    /**
     * How new authorization codes and refresh tokens are keyed in storage (server/security/tokens.ts):
     * `hashed` by their SHA-256, as every version does; `time-ordered` by their issue time, then
     * their SHA-256, so that their indexes grow at one end (flat exchange cost at millions of rows).
     * Both are read whatever this says. `time-ordered` once no instance of an earlier version runs
     * (and no roll back to one is planned): those find only `hashed` ones.
     */
    IDENTITY_TOKEN_KEYS: z.enum(["hashed", "time-ordered"]).default("hashed"),
    // --- Identity: retention (handlers/identity/storage/retention-rules.ts). Periods in seconds, counted from when a row stopped mattering. ---
    /** Codes, pending authorization requests and social sign-in states: kept this long past their expiry. */
    IDENTITY_RETENTION_CODES_SECONDS: retention.default(24 * 3600),
    /** Refresh tokens (rotated ones included: their reuse revokes the family until they expire): kept this long past expiry; grants (refresh families) this long after everything issued from them ended. */
    IDENTITY_RETENTION_REFRESH_TOKENS_SECONDS: retention.default(24 * 3600),
    /** Revoked access tokens' rows: kept this long past the token's own expiry. */
    IDENTITY_RETENTION_REVOKED_TOKENS_SECONDS: retention.default(3600),
    /** Single sign-on sessions: kept this long past expiry. */
    IDENTITY_RETENTION_SESSIONS_SECONDS: retention.default(24 * 3600),
    /** Failed sign-ins and registration attempts: kept this long (at least LOGIN_WINDOW_SECONDS and the 1-hour registration window). */
    IDENTITY_RETENTION_THROTTLE_SECONDS: retention.default(24 * 3600),
    /** Webhook history: attempts, finished deliveries and events older than this. */
    IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS: retention.default(30 * 24 * 3600),
    /** How often the purge runs. */
    IDENTITY_RETENTION_INTERVAL_SECONDS: seconds.max(24 * 3600).default(300),
    /** Rows per DELETE: each batch is one short transaction, the purge yields between batches. At 10 a batch's COMMIT costs what a one-row write's does (bench:scale). */
    IDENTITY_RETENTION_BATCH_ROWS: z.coerce.number().int().min(1).max(10_000).default(10),
    // --- Identity, accounts area: social (upstream) identity providers of this deployment. ---
    /** JSON array of providers (`oidc` by issuer, or `oauth2` by endpoints); default none. See socialProvidersSchema. */
    IDENTITY_SOCIAL_PROVIDERS: z
      .string()
      .default("[]")
      .transform((text, c) => {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          c.addIssue({ code: z.ZodIssueCode.custom, message: "must be a JSON array of providers" });
          return z.NEVER;
        }
        const parsed = socialProvidersSchema.safeParse(value);
        if (!parsed.success) {
          const why = parsed.error.issues.map((i) => `[${i.path.join(".")}] ${i.message}`).join("; ");
          c.addIssue({ code: z.ZodIssueCode.custom, message: `invalid providers: ${why}` });
          return z.NEVER;
        }
        return parsed.data;
      }),
  })
  .superRefine((c, ctx) => {
    if (c.EMAIL_SMTP_URL && c.EMAIL_TRANSPORT === "sink") {
      ctx.addIssue({
        code: "custom",
        path: ["EMAIL_TRANSPORT"],
        message: "sink and EMAIL_SMTP_URL exclude each other: choose the relay or the development sink",
      });
    }
    if (c.SHUTDOWN_DELAY_MS !== undefined && c.SHUTDOWN_DELAY_MS >= c.SHUTDOWN_TIMEOUT_MS && c.SHUTDOWN_DELAY_MS > 0) {
      ctx.addIssue({
        code: "custom",
        path: ["SHUTDOWN_DELAY_MS"],
        message: "must be shorter than SHUTDOWN_TIMEOUT_MS, which counts from the signal too",
      });
    }
    // A key must be read by every instance, and every cached JWKS refetched, before it signs.
    if (c.SIGNING_KEY_ACTIVATION_DELAY_SECONDS < minimumActivationDelaySeconds(c.SIGNING_KEY_REFRESH_SECONDS)) {
      ctx.addIssue({
        code: "custom",
        path: ["SIGNING_KEY_ACTIVATION_DELAY_SECONDS"],
        message: `must be at least ${minimumActivationDelaySeconds(c.SIGNING_KEY_REFRESH_SECONDS)} (10 minutes, and SIGNING_KEY_REFRESH_SECONDS + 300 s of JWKS cache)`,
      });
    }
    // A wait longer than the window would outlive the failures that ask for it.
    if (c.LOGIN_BACKOFF_MAX_SECONDS > c.LOGIN_WINDOW_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["LOGIN_BACKOFF_MAX_SECONDS"],
        message: `must be at most LOGIN_WINDOW_SECONDS (${c.LOGIN_WINDOW_SECONDS})`,
      });
    }
    // A purged message takes its Idempotency-Key along: a retry within the key's 24 hours would send again.
    if (c.EMAIL_RETENTION_MESSAGES_SECONDS < IDEMPOTENCY_WINDOW_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["EMAIL_RETENTION_MESSAGES_SECONDS"],
        message: `must be at least ${IDEMPOTENCY_WINDOW_SECONDS} (the 24-hour Idempotency-Key window)`,
      });
    }
    // Purging a failure that its window still counts would lift a lockout early.
    const floor = Math.max(c.LOGIN_WINDOW_SECONDS, REGISTRATION_WINDOW_SECONDS);
    if (c.IDENTITY_RETENTION_THROTTLE_SECONDS < floor) {
      ctx.addIssue({
        code: "custom",
        path: ["IDENTITY_RETENTION_THROTTLE_SECONDS"],
        message: `must be at least ${floor} (LOGIN_WINDOW_SECONDS and the 1-hour registration window)`,
      });
    }
  })
  .transform((c) => ({ ...c, SHUTDOWN_DELAY_MS: c.SHUTDOWN_DELAY_MS ?? defaultShutdownDelayMs(c.SHUTDOWN_TIMEOUT_MS) }));

/** SHUTDOWN_DELAY_MS when unset: 5 s, or half of a shorter SHUTDOWN_TIMEOUT_MS (the drain needs the rest). */
export function defaultShutdownDelayMs(timeoutMs: number): number {
  return Math.min(5_000, Math.floor(timeoutMs / 2));
}

export type Config = z.infer<typeof schema>;

/** Reads and validates the environment; throws one message listing every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ""));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    // Identity, accounts area: the providers' JSON carries client secrets, so its value is never echoed.
    // The relay URL may carry a password, and the metrics token is one: never echoed either.
    const hidden = ["IDENTITY_SOCIAL_PROVIDERS", "EMAIL_SMTP_URL", "METRICS_TOKEN", "KEY_ENCRYPTION_KEY", "KEY_ENCRYPTION_KEY_PREVIOUS"];
    const shown = (name: string) => (hidden.includes(name) ? "(value hidden: it holds secrets)" : `(got ${JSON.stringify(env[name])})`);
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message} ${shown(String(i.path[0]))}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export function publicUrl(config: Config, service: "identity" | "repository" | "email"): string {
  const explicit = { identity: config.IDENTITY_PUBLIC_URL, repository: config.REPOSITORY_PUBLIC_URL, email: config.EMAIL_PUBLIC_URL }[
    service
  ];
  const port = { identity: config.IDENTITY_PORT, repository: config.REPOSITORY_PORT, email: config.EMAIL_PORT }[service];
  return (explicit ?? `http://${config.HOST}:${port}`).replace(/\/$/, "");
}
