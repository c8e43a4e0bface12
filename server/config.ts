/**
 * The platform's configuration: what every service reads the same way (interface, storage, logs,
 * request bodies, proxies, shutdown, key encryption, signing keys, the sign-in throttle, the
 * webhook engine), and `readConfig`, which parses it together with the services' sections
 * (`handlers/<service>/config.ts`). Every variable has a default that works with no configuration
 * and is validated at start; docs/configuration.md is written from the descriptions below.
 */
import { z } from "zod";
import { parseTrustProxy } from "./http/trusted-proxy.ts";
import { parseEncryptionKey } from "./security/key-encryption.ts";
import type { SignInPolicy } from "./security/sign-in-throttle.ts";
import { minimumActivationDelaySeconds } from "./keys/schedule.ts";
import {
  type ConfigSection,
  defineSection,
  docOf,
  flag,
  type Parsed,
  port,
  rule,
  type SectionValues,
  seconds,
  variable,
} from "./config-schema.ts";

/** A key encryption key: 32 bytes in base64, base64url or hex. */
const encryptionKey = z.string().transform((text, ctx) => {
  const key = parseEncryptionKey(text);
  if (!key) {
    ctx.addIssue({ code: "custom", message: "must be 32 bytes in base64, base64url or hex (openssl rand -base64 32)" });
    return z.NEVER;
  }
  return key;
});

const platformVariables = {
  HOST: variable(z.string().min(1).default("127.0.0.1"), {
    description:
      "Interface every listener binds (the services' HTTP ports and the email service's inbound SMTP). The default, `127.0.0.1`, " +
      "accepts connections from this machine only: in a container, set `0.0.0.0` (or `::`), or the published ports reach nothing.",
    envGroup: "production",
    example: "0.0.0.0",
  }),
  DATA_DIR: variable(z.string().min(1).default("./data"), {
    description: "Folder of the SQLite files, one per service (`identity.sqlite`, …), used when DATABASE_URL is unset.",
  }),
  DATABASE_URL: variable(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL (leave unset for SQLite)")
      .optional(),
    {
      description:
        "`postgres://…` switches every service to PostgreSQL, each in its own schema (`identity`, `repository`, `email`). " +
        "Unset: one SQLite file per service in DATA_DIR, which serves one instance of each; several instances need PostgreSQL.",
      defaultText: "unset (SQLite)",
      secret: true,
      envGroup: "production",
      example: "postgres://platform:CHANGE-ME@postgres:5432/platform",
    },
  ),
  LOG_LEVEL: variable(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), {
    description: "pino's level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. Logs are JSON lines on stdout.",
  }),
  BODY_LIMIT_BYTES: variable(
    z.coerce
      .number()
      .int()
      .min(1024)
      .max(10 * 1024 * 1024)
      .default(65536),
    {
      description:
        "Largest request body accepted, in bytes; a larger one is answered 413. The email service's send operation has a limit of its own.",
    },
  ),
  VALIDATE_RESPONSES: variable(flag("false"), {
    description:
      "`true`: every response is checked against the OpenAPI document, and a violation becomes a logged 500. The test suites turn it on.",
  }),
  SHUTDOWN_TIMEOUT_MS: variable(z.coerce.number().int().min(0).max(600_000).default(25_000), {
    description:
      "On SIGTERM or SIGINT, the longest wait, counted from the signal, for requests in flight and then the background work " +
      "(dispatchers, listeners); what still runs then is cut off and the process exits 1 (else 0). " +
      "Keep it under the orchestrator's kill timeout (Kubernetes: 30 s).",
  }),
  SHUTDOWN_DELAY_MS: variable(z.coerce.number().int().min(0).max(600_000).optional(), {
    description:
      "After SIGTERM, how long the ports stay open, serving with `Connection: close`, while `/ready` answers 503, so that a " +
      "balancer polling it (or Kubernetes, whose endpoints lag the signal) stops sending before the ports close: a connection " +
      "that reaches a closing port is reset. Set it to the balancer's probe interval times its failure threshold; 0 where nothing " +
      "routes by `/ready`. SIGINT (Ctrl-C) does not wait. Shorter than SHUTDOWN_TIMEOUT_MS. The default is lightship's.",
    defaultText: "5000, or half of a shorter SHUTDOWN_TIMEOUT_MS",
    envGroup: "production",
    example: "10000",
  }),
  TRUST_PROXY: variable(
    z
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
    {
      description:
        "The reverse proxies in front of the services: a hop count (`1`) or a comma-separated list of their addresses and CIDRs " +
        "(`10.0.0.0/8, 2001:db8::1`). Only from them are the client's address, scheme and host read (X-API-13) and their " +
        "`X-Request-Id` kept (X-API-12). Unset behind a proxy, every client shares the proxy's address, and one guesser's failed " +
        "sign-ins refuse everyone. Prefer addresses: a hop count trusts whatever connects.",
      defaultText: "unset (trust no one)",
      envGroup: "production",
      example: "10.0.0.0/8",
    },
  ),
  PROXY_HEADER: variable(z.enum(["x-forwarded", "forwarded"]).default("x-forwarded"), {
    description:
      "Which header the trusted proxies set about the client: `x-forwarded` (`X-Forwarded-For`/`-Proto`/`-Host`: nginx, HAProxy, " +
      "most cloud balancers) or `forwarded` (RFC 7239). Only that one is read, so the proxy must set or append it.",
  }),
  METRICS_TOKEN: variable(
    z
      .string()
      .regex(/^[A-Za-z0-9\-._~+/]{16,256}$/, "16-256 characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 32)")
      .optional(),
    {
      description:
        "When set (16-256 characters of `A-Za-z0-9-._~+/`: `openssl rand -hex 32`), `/metrics` answers only " +
        "`Authorization: Bearer <METRICS_TOKEN>` (X-API-11); unset, it is open like `/health`.",
      defaultText: "unset (open)",
      secret: true,
      envGroup: "production",
    },
  ),
  KEY_ENCRYPTION_KEY: variable(encryptionKey.optional(), {
    description:
      "32 bytes (base64, base64url or hex: `openssl rand -base64 32`) that seal the private signing keys and the server secrets " +
      "in the database (AES-256-GCM). Setting it seals the stored ones at the next start; without it, sealed keys cannot be " +
      "read, so keep it as safe as the database and apart from its backups.",
    defaultText: "unset (stored plain)",
    secret: true,
    envGroup: "production",
  }),
  KEY_ENCRYPTION_KEY_PREVIOUS: variable(encryptionKey.optional(), {
    description:
      "While changing KEY_ENCRYPTION_KEY: the key before it, which still opens what was sealed under it; each is sealed again " +
      "under the new key at start.",
    secret: true,
    envGroup: "security",
  }),
  SIGNING_KEY_REFRESH_SECONDS: variable(seconds.max(3600).default(60), {
    description:
      "How often each instance reads its signing keys again, so that a rotation (`npm run admin -- <service> rotate-keys`) " +
      "reaches it without a restart.",
  }),
  SIGNING_KEY_ACTIVATION_DELAY_SECONDS: variable(seconds.max(30 * 24 * 3600).default(3600), {
    description:
      "`rotate-keys`: how long a new key is published before it signs; at least 600 and SIGNING_KEY_REFRESH_SECONDS + 300 " +
      "(the JWKS cache), so that every instance and every client knows it first.",
  }),
  LOGIN_WINDOW_SECONDS: variable(seconds.default(15 * 60), {
    description:
      "The window in which failed password sign-ins count: identity's hosted login and social link form, the repository's " +
      "`/auth/login` (one policy for both, X-ID-AZ-3/4, X-RB-6/9).",
    envGroup: "security",
  }),
  LOGIN_MAX_FAILURES: variable(z.coerce.number().int().min(1).max(1000).default(10), {
    description:
      "Failures for one account from one client address within LOGIN_WINDOW_SECONDS before that address is refused for that " +
      "account (429 until the oldest leaves the window); also the account's failures, from any address, after which it is slowed down.",
    envGroup: "security",
  }),
  LOGIN_ADDRESS_MAX_FAILURES: variable(z.coerce.number().int().min(1).max(100_000).default(100), {
    description:
      "Failures from one client address (an IPv6 client by its /64) across all accounts within LOGIN_WINDOW_SECONDS before it is refused (429).",
    envGroup: "security",
  }),
  LOGIN_BACKOFF_MAX_SECONDS: variable(seconds.default(60), {
    description:
      "The slowdown of an account with many failures: an attempt from an address it does not know waits 1 s after the latest " +
      "failure, then 2 s, 4 s … up to this; at most LOGIN_WINDOW_SECONDS.",
    envGroup: "security",
  }),
  LOGIN_KNOWN_ADDRESS_SECONDS: variable(seconds.max(10 * 365 * 24 * 3600).default(30 * 24 * 3600), {
    description:
      "How long a client address stays known to an account after a successful sign-in from it; known addresses are never slowed down.",
    envGroup: "security",
  }),
  WEBHOOK_TIMEOUT_MS: variable(z.coerce.number().int().min(100).max(120_000).default(30_000), {
    description:
      "A webhook delivery attempt without a complete answer within this many milliseconds has failed. " +
      "A service may have its own (EMAIL_WEBHOOK_TIMEOUT_MS).",
  }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: variable(
    z
      .string()
      .default("false")
      .refine(
        (v) => v === "true" || v === "false" || v.split(",").every((e) => /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(e.trim())),
        "true, false or a comma-separated list of IPs/CIDRs",
      ),
    {
      description:
        "The SSRF guard: webhooks reach only global unicast addresses; loopback, private, link-local and other internal ones are " +
        "refused in every notation (checked at registration, on every DNS answer and on the address connected to). `true` " +
        "allows all of them (a trusted network), a comma-separated list of addresses and CIDRs allows just those.",
      envGroup: "security",
    },
  ),
  WEBHOOK_REQUIRE_HTTPS: variable(flag("true"), {
    description: "Webhook URLs must be `https`. Set `false` for plain-http receivers in local development.",
    envGroup: "security",
  }),
  WEBHOOK_LEASE_SECONDS: variable(seconds.max(3600).default(60), {
    description:
      "How long a dispatcher holds a delivery it claimed (raised to 2 × the timeout + 1 s when shorter); a crashed instance's " +
      "claims are retried after it. The email service's outbound copies hold theirs at least 120 s.",
  }),
  WEBHOOK_POLL_INTERVAL_MS: variable(z.coerce.number().int().min(5).max(60_000).default(1000), {
    description:
      "How often an idle dispatcher looks for due work (new events wake it at once); the email service's outbound dispatcher too.",
  }),
  WEBHOOK_CONCURRENCY: variable(z.coerce.number().int().min(1).max(1000).default(50), {
    description: "Webhook deliveries in flight at once per service instance.",
  }),
};

export type PlatformValues = Parsed<typeof platformVariables>;

export const platformConfig = defineSection({
  title: "Platform",
  summary: "Read by every service the same way.",
  variables: platformVariables,
  rules: [
    rule<PlatformValues>(
      ["SHUTDOWN_DELAY_MS", "SHUTDOWN_TIMEOUT_MS"],
      (c) =>
        c.SHUTDOWN_DELAY_MS !== undefined &&
        c.SHUTDOWN_DELAY_MS >= c.SHUTDOWN_TIMEOUT_MS &&
        c.SHUTDOWN_DELAY_MS > 0 &&
        "must be shorter than SHUTDOWN_TIMEOUT_MS, which counts from the signal too",
    ),
    // A key must be read by every instance, and every cached JWKS refetched, before it signs.
    rule<PlatformValues>(["SIGNING_KEY_ACTIVATION_DELAY_SECONDS", "SIGNING_KEY_REFRESH_SECONDS"], (c) => {
      const minimum = minimumActivationDelaySeconds(c.SIGNING_KEY_REFRESH_SECONDS);
      return (
        c.SIGNING_KEY_ACTIVATION_DELAY_SECONDS < minimum &&
        `must be at least ${minimum} (10 minutes, and SIGNING_KEY_REFRESH_SECONDS + 300 s of JWKS cache)`
      );
    }),
    // A wait longer than the window would outlive the failures that ask for it.
    rule<PlatformValues>(
      ["LOGIN_BACKOFF_MAX_SECONDS", "LOGIN_WINDOW_SECONDS"],
      (c) => c.LOGIN_BACKOFF_MAX_SECONDS > c.LOGIN_WINDOW_SECONDS && `must be at most LOGIN_WINDOW_SECONDS (${c.LOGIN_WINDOW_SECONDS})`,
    ),
  ],
  finish: (c) => ({ ...c, SHUTDOWN_DELAY_MS: c.SHUTDOWN_DELAY_MS ?? defaultShutdownDelayMs(c.SHUTDOWN_TIMEOUT_MS) }),
});

export type PlatformConfig = SectionValues<typeof platformConfig>;

/** SHUTDOWN_DELAY_MS when unset: 5 s, or half of a shorter SHUTDOWN_TIMEOUT_MS (the drain needs the rest). */
export function defaultShutdownDelayMs(timeoutMs: number): number {
  return Math.min(5_000, Math.floor(timeoutMs / 2));
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The platform's values and those of each section given. */
export type ConfigOf<Sections extends readonly ConfigSection[]> = PlatformConfig & UnionToIntersection<SectionValues<Sections[number]>>;

/**
 * Reads and validates the environment: the platform's section and the sections given, as one.
 * Throws one ConfigError listing every bad variable and every broken rule, each with the value it
 * got, but never the value of a secret. An empty variable counts as unset.
 */
export function readConfig<const Sections extends readonly ConfigSection[]>(
  env: Readonly<Record<string, string | undefined>>,
  sections: Sections,
): ConfigOf<Sections> {
  const all: readonly ConfigSection[] = [platformConfig as ConfigSection, ...sections];
  const variables = new Map<string, z.core.$ZodType>();
  for (const section of all) {
    for (const [name, schema] of Object.entries(section.variables)) {
      if (variables.has(name)) throw new Error(`${name} is declared by two configuration sections`);
      variables.set(name, schema);
    }
  }
  const problems: Array<{ name: string; message: string }> = [];
  const values: Record<string, unknown> = {};
  for (const [name, schema] of variables) {
    const parsed = z.safeParse(schema, env[name] === "" ? undefined : env[name]);
    if (parsed.success) values[name] = parsed.data;
    else for (const issue of parsed.error.issues) problems.push({ name: [name, ...issue.path].join("."), message: issue.message });
  }
  const report = (name: string, message: string) => problems.push({ name, message });
  for (const rule of all.flatMap((section) => section.rules ?? [])) {
    if (rule.variables.every((name) => name in values)) rule.check(values as never, report);
  }
  if (problems.length) {
    const shown = (name: string) => {
      const schema = variables.get(name);
      if (schema && docOf(schema)?.secret) return "(value hidden: it holds secrets)";
      return env[name] === undefined || env[name] === "" ? "(unset)" : `(got ${JSON.stringify(env[name])})`;
    };
    const lines = problems.map(({ name, message }) => `  ${name}: ${message} ${shown(name.split(".")[0]!)}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  let result = values;
  for (const section of all) if (section.finish) result = { ...result, ...(section.finish(result as never) as object) };
  return result as ConfigOf<Sections>;
}

// --- Values for the modules that use them. ---

/**
 * The variables of a service's HTTP listener, `<PREFIX>_PORT` and `<PREFIX>_PUBLIC_URL`, in the
 * service's section. `about` says what the public URL is to that service (its issuer, its links).
 */
export function listenerVariables<P extends string>(prefix: P, service: string, defaultPort: number, about: string) {
  return {
    [`${prefix}_PORT`]: portVariable(defaultPort, service),
    [`${prefix}_PUBLIC_URL`]: publicUrlVariable(prefix, service, about),
  } as Record<`${P}_PORT`, ReturnType<typeof portVariable>> & Record<`${P}_PUBLIC_URL`, ReturnType<typeof publicUrlVariable>>;
}

const portVariable = (defaultPort: number, service: string) =>
  variable(port.default(defaultPort), { description: `Port of the ${service} service's HTTP listener (0 = any free port).` });

const publicUrlVariable = (prefix: string, service: string, about: string) =>
  variable(z.string().url().optional(), {
    description:
      `Public base URL of the ${service} service, as its clients reach it (behind a proxy: the proxy's \`https://\` address): ${about} ` +
      "When it is `https`, every answer carries `Strict-Transport-Security` (X-API-17). Never taken from a request's headers.",
    defaultText: `\`http://HOST:${prefix}_PORT\``,
    envGroup: "production",
    example: `https://${prefix.toLowerCase()}.example.com`,
  });

/** A service's HTTP listener: the port it binds, the variable that sets it, and its public base URL (no trailing slash). */
export interface Listener {
  port: number;
  portVariable: string;
  publicUrl: string;
}

export function listenerOf<P extends string>(
  config: Pick<PlatformValues, "HOST"> & Record<`${P}_PORT`, number> & Partial<Record<`${P}_PUBLIC_URL`, string>>,
  prefix: P,
): Listener {
  const portVariable = `${prefix}_PORT` as const;
  const port = config[portVariable] as number;
  const explicit = config[`${prefix}_PUBLIC_URL` as const] as string | undefined;
  return { port, portVariable, publicUrl: (explicit ?? `http://${config.HOST}:${port}`).replace(/\/$/, "") };
}

/** The password sign-in policy every service applies (server/security/sign-in-throttle.ts). */
export function signInPolicyOf(config: PlatformValues): SignInPolicy {
  return {
    windowSeconds: config.LOGIN_WINDOW_SECONDS,
    accountAddressMaxFailures: config.LOGIN_MAX_FAILURES,
    addressMaxFailures: config.LOGIN_ADDRESS_MAX_FAILURES,
    backoffAfterFailures: config.LOGIN_MAX_FAILURES,
    backoffMaxSeconds: config.LOGIN_BACKOFF_MAX_SECONDS,
    knownAddressSeconds: config.LOGIN_KNOWN_ADDRESS_SECONDS,
  };
}

/** What a service's webhook subscriptions and delivery engine are given (server/webhooks). */
export interface WebhookSettings {
  requireHttps: boolean;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS as written: `true`, `false` or addresses and CIDRs (server/webhooks/ssrf.ts). */
  allowPrivateTargets: string;
  timeoutMs: number;
  leaseMs: number;
  pollIntervalMs: number;
  concurrency: number;
}

export function webhookSettingsOf(config: PlatformValues): WebhookSettings {
  return {
    requireHttps: config.WEBHOOK_REQUIRE_HTTPS,
    allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    leaseMs: config.WEBHOOK_LEASE_SECONDS * 1000,
    pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
  };
}
