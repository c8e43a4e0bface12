/**
 * Where the conformance suite points. By default each test file starts the service it checks in
 * this process, on a free 127.0.0.1 port, with a fresh database and a ManualClock the tests can
 * move (expiry rules are tested without waiting). Set CONFORMANCE_<SERVICE>_URL to check any
 * deployment instead: clock-driven and admin-driven checks then assert what they can from outside.
 *
 * Storage: SQLite in a temp folder, or PostgreSQL when CONFORMANCE_DATABASE_URL names a server
 * whose user may CREATE DATABASE (each target gets a throwaway database, dropped at close).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import knexFactory from "knex";
import { ManualClock } from "../../server/clock.ts";
import { loadConfig, type Config } from "../../app/load-config.ts";
import { createLogger } from "../../server/logger.ts";
import { listen } from "../../server/http/listen.ts";
import { freePort, isAddressInUse } from "../../support/free-port.ts";
import { observeService } from "./contract-recorder.ts";
import { claimRepositoryUser } from "./user-pool.ts";
import { expectStatus, identityApi } from "./api.ts";
import { adminTokenViaFlow } from "./oauth-flow.ts";

// The services' code is imported when a file starts one in-process, never against a deployment:
// every test file imports this module, and a deployment run should not load what it never runs.
type RepositoryService = Awaited<ReturnType<typeof import("../../handlers/repository/service.ts")["createRepositoryService"]>>;
type IdentityService = Awaited<ReturnType<typeof import("../../handlers/identity/service.ts")["createIdentityService"]>>;
type EmailService = Awaited<ReturnType<typeof import("../../handlers/email/service.ts")["createEmailService"]>>;

/**
 * Builds a service for a port it must know before listening (its public URL is its issuer), then
 * listens there. If another process took the port in between (freePort says why that is rare, not
 * impossible), the service is closed and built again on another port.
 */
async function startOnFreePort<S extends { app: Parameters<typeof listen>[0]; close(): Promise<void> }>(
  build: (port: number) => Promise<S>,
): Promise<{ service: S; http: Awaited<ReturnType<typeof listen>> }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const service = await build(port);
    try {
      return { service, http: await listen(service.app, "127.0.0.1", port) };
    } catch (error) {
      await service.close();
      if (!isAddressInUse(error) || attempt === 5) throw error;
    }
  }
}

/**
 * A service listening on a port, as a test holds it: its URL, and `close` (the port, the contract
 * recorder's note of it, the service, then its storage if given).
 */
function running(
  http: { url: string; close(): Promise<void> },
  service: { close(): Promise<void> },
  storage?: { drop(): Promise<void> },
  forget: () => void = () => {},
) {
  return {
    url: http.url,
    close: async () => {
      await http.close();
      forget();
      await service.close();
      await storage?.drop();
    },
  };
}

export interface Credentials {
  email: string;
  password: string;
}

export interface RepositoryTarget {
  url: string;
  /** Present when the suite runs the service: move time forward. */
  clock?: ManualClock;
  /** Present when the suite runs the service: create a user directly (admin path). */
  createUser?: (c?: Partial<Credentials>) => Promise<Credentials>;
  /** A user that exists on the target (created, or given by CONFORMANCE_REPOSITORY_EMAIL/_PASSWORD). */
  user: Credentials;
  /** In-process only: the running service, for fixtures that need its database. */
  service?: RepositoryService;
  /** In-process only: another instance on the same database and clock, with its own port. Close it before the target. */
  anotherInstance?: () => Promise<{ url: string; close(): Promise<void> }>;
  /** In-process only: what a SIGTERM does first (server/lifecycle.ts): from now on `/ready` answers 503. */
  drain?: () => void;
  close(): Promise<void>;
}

export const storageKind = (): "postgres" | "sqlite" => (process.env.CONFORMANCE_DATABASE_URL ? "postgres" : "sqlite");

/** A fresh database for one target: a temp SQLite folder, or a throwaway PostgreSQL database. */
async function freshStorage(): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "conformance-"));
  const admin = process.env.CONFORMANCE_DATABASE_URL;
  if (!admin) return { env: { DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  const name = `conformance_${randomBytes(6).toString("hex")}`;
  const server = knexFactory({ client: "pg", connection: admin, pool: { min: 0, max: 1 } });
  await server.raw(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    drop: async () => {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function testConfig(env: Record<string, string>): Config {
  return loadConfig({
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.CONFORMANCE_LOG_LEVEL ?? "silent",
    VALIDATE_RESPONSES: "true",
    ...env,
  });
}

let counter = 0;
export const uniqueEmail = (prefix = "user") =>
  `${prefix}-${Date.now().toString(36)}-${++counter}-${randomBytes(3).toString("hex")}@example.com`;

export async function repositoryTarget(options: { env?: Record<string, string> } = {}): Promise<RepositoryTarget> {
  const external = process.env.CONFORMANCE_REPOSITORY_URL;
  if (external) {
    const email = process.env.CONFORMANCE_REPOSITORY_EMAIL;
    const password = process.env.CONFORMANCE_REPOSITORY_PASSWORD;
    if (!email || !password)
      throw new Error("CONFORMANCE_REPOSITORY_URL needs CONFORMANCE_REPOSITORY_EMAIL and CONFORMANCE_REPOSITORY_PASSWORD");
    observeService(external, "repository");
    // A user of the file's own when the run has a pool: builds queued by one file must not be polled by another's agents.
    const user = claimRepositoryUser() ?? { email, password };
    return { url: external.replace(/\/$/, ""), user, close: async () => {} };
  }
  const { createRepositoryService } = await import("../../handlers/repository/service.ts");
  const storage = await freshStorage();
  const config = testConfig({ REPOSITORY_PORT: "0", ...storage.env, ...options.env });
  const clock = new ManualClock();
  const service = await createRepositoryService(config, clock, createLogger(config.LOG_LEVEL));
  const http = await listen(service.app, "127.0.0.1", 0);
  const forget = observeService(http.url, "repository");
  // The issuer must be the address clients reach; tokens are checked against it.
  const createUser = async (c: Partial<Credentials> = {}) => {
    const creds = { email: c.email ?? uniqueEmail(), password: c.password ?? `pw-${randomBytes(8).toString("hex")}` };
    await service.deps.accounts.createUser(creds.email, creds.password);
    return creds;
  };
  return {
    url: http.url,
    clock,
    createUser,
    user: await createUser(),
    service,
    drain: () => service.readiness.startDraining(),
    anotherInstance: async () => {
      const other = await createRepositoryService(config, clock, createLogger(config.LOG_LEVEL));
      const otherHttp = await listen(other.app, "127.0.0.1", 0);
      return running(otherHttp, other);
    },
    close: running(http, service, storage, forget).close,
  };
}

export interface IdentityTarget {
  url: string;
  /** A deployment (CONFORMANCE_IDENTITY_URL): no clock, no service, one organization. */
  external?: boolean;
  clock?: ManualClock;
  /** In-process only: the running service, for fixtures (bootstrap admins, mint tokens). */
  service?: IdentityService;
  /** An organization with an admin user: created through the bootstrap path in-process; on a deployment, always the configured admin's. */
  createOrganization?: (name?: string) => Promise<{ organizationId: string; admin: Credentials & { userId: string } }>;
  /**
   * In-process only: another instance of the service on the same database, with the same issuer
   * and its own port, as two instances behind a load balancer are. Close it before the target.
   */
  anotherInstance?: () => Promise<{ url: string; close(): Promise<void> }>;
  /** In-process only: what a SIGTERM does first (server/lifecycle.ts): from now on `/ready` answers 503. */
  drain?: () => void;
  close(): Promise<void>;
}

/**
 * The identity service, in-process on a free port (issuer = its real URL), or the deployment at
 * CONFORMANCE_IDENTITY_URL. `env` adds configuration (e.g. short webhook timeouts). `host`: the
 * name of its public URL (and `url`), 127.0.0.1 unless told; `localhost` for WebAuthn, whose relying
 * party id must be a domain, never an IP address.
 */
export async function identityTarget(options: { env?: Record<string, string>; host?: "localhost" } = {}): Promise<IdentityTarget> {
  const external = process.env.CONFORMANCE_IDENTITY_URL;
  if (external) {
    observeService(external, "identity");
    return externalIdentityTarget(external.replace(/\/$/, ""));
  }
  const { createIdentityService } = await import("../../handlers/identity/service.ts");
  const { createOrganizationWithAdmin } = await import("../../handlers/identity/domain/accounts/bootstrap.ts");
  const storage = await freshStorage();
  const configFor = (port: number) =>
    testConfig({
      IDENTITY_PORT: String(port),
      // The issuer must be the URL clients use, so the port is chosen before the service is built.
      IDENTITY_PUBLIC_URL: `http://${options.host ?? "127.0.0.1"}:${port}`,
      ...storage.env,
      ...options.env,
    });
  const clock = new ManualClock();
  const { service, http } = await startOnFreePort((port) =>
    createIdentityService(configFor(port), clock, createLogger(configFor(port).LOG_LEVEL)),
  );
  const config = configFor(http.port);
  const url = options.host ? `http://${options.host}:${http.port}` : http.url;
  const forget = observeService(url, "identity");
  const stores = service.ctx.storage;
  return {
    url,
    clock,
    service,
    drain: () => service.readiness.startDraining(),
    createOrganization: async (name = `Org ${randomBytes(3).toString("hex")}`) => {
      const admin = { email: uniqueEmail("admin"), password: `pw-${randomBytes(8).toString("hex")}` };
      const { organization, user } = await createOrganizationWithAdmin(stores, clock, {
        organizationName: name,
        ...admin,
        firstName: "Ada",
        lastName: "Admin",
      });
      return { organizationId: organization.id, admin: { ...admin, userId: user.id } };
    },
    anotherInstance: async () => {
      const { service: other, http: otherHttp } = await startOnFreePort((otherPort) =>
        createIdentityService({ ...config, IDENTITY_PORT: otherPort }, clock, createLogger(config.LOG_LEVEL)),
      );
      return running(otherHttp, other, undefined, observeService(otherHttp.url, "identity"));
    },
    close: running(http, service, storage, forget).close,
  };
}

/**
 * A deployment's identity service. There is no organization sign-up over HTTP, so every
 * "organization" a test asks for is the one CONFORMANCE_IDENTITY_ADMIN_EMAIL/_PASSWORD administer
 * (created with `npm run admin -- identity create-org`); tests that need two organizations, or
 * another admin, skip on a deployment. The admin signs in through the hosted login form
 * (oauth-flow.ts `adminTokenViaFlow`), unless CONFORMANCE_IDENTITY_ADMIN_TOKEN gives a dashboard
 * token. Everything a test provisions has a unique name, so a second run on the same deployment
 * passes too.
 */
function externalIdentityTarget(url: string): IdentityTarget {
  const email = process.env.CONFORMANCE_IDENTITY_ADMIN_EMAIL;
  const password = process.env.CONFORMANCE_IDENTITY_ADMIN_PASSWORD;
  if (!email || !password)
    throw new Error(
      "CONFORMANCE_IDENTITY_URL needs CONFORMANCE_IDENTITY_ADMIN_EMAIL and CONFORMANCE_IDENTITY_ADMIN_PASSWORD (an organization admin: npm run admin -- identity create-org)",
    );
  let organization: Promise<{ organizationId: string; admin: Credentials & { userId: string } }> | undefined;
  const target: IdentityTarget = {
    url,
    external: true,
    createOrganization: () =>
      (organization ??= (async () => {
        const token = process.env.CONFORMANCE_IDENTITY_ADMIN_TOKEN || (await adminTokenViaFlow(target, { email, password }));
        const api = identityApi(url, { token });
        const what = (path: string) => `GET ${path} as CONFORMANCE_IDENTITY_ADMIN_EMAIL`;
        const [org, me] = await Promise.all([
          expectStatus(api.GET("/api/organizations/current"), 200, what("/api/organizations/current")),
          expectStatus(api.GET("/api/users/me"), 200, what("/api/users/me")),
        ]);
        return { organizationId: org.id, admin: { email, password, userId: me.id } };
      })()),
    close: async () => {},
  };
  return target;
}

export interface EmailTarget {
  url: string;
  /** An API key with full access (created in-process, or CONFORMANCE_EMAIL_API_KEY). */
  apiKey: string;
  clock?: ManualClock;
  /** In-process only: the running service (create keys, settle queues, reach the simulator). */
  service?: EmailService;
  /** Runs due copies, the simulator's reports and due webhook deliveries now (in-process), or waits (external). */
  settle(): Promise<void>;
  /** In-process only: what a SIGTERM does first (server/lifecycle.ts): from now on `/ready` answers 503. */
  drain?: () => void;
  close(): Promise<void>;
}

/**
 * The email service, in-process on a free port with its simulator and inbound listener on free
 * ports, or the deployment at CONFORMANCE_EMAIL_URL with CONFORMANCE_EMAIL_API_KEY.
 */
export async function emailTarget(options: { env?: Record<string, string>; retryDelaysMs?: number[] } = {}): Promise<EmailTarget> {
  const external = process.env.CONFORMANCE_EMAIL_URL;
  if (external) {
    const apiKey = process.env.CONFORMANCE_EMAIL_API_KEY;
    if (!apiKey) throw new Error("CONFORMANCE_EMAIL_URL needs CONFORMANCE_EMAIL_API_KEY");
    observeService(external, "email");
    return { url: external.replace(/\/$/, ""), apiKey, settle: () => new Promise((r) => setTimeout(r, 3000)), close: async () => {} };
  }
  const { createEmailService } = await import("../../handlers/email/service.ts");
  const storage = await freshStorage();
  const clock = new ManualClock();
  const { service, http } = await startOnFreePort((port) => {
    const config = testConfig({
      EMAIL_PORT: String(port),
      EMAIL_PUBLIC_URL: `http://127.0.0.1:${port}`,
      EMAIL_INBOUND_SMTP_PORT: "0",
      EMAIL_SIMULATOR_REPORT_DELAY_MS: "5",
      WEBHOOK_REQUIRE_HTTPS: "false",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1",
      ...storage.env,
      ...options.env,
    });
    return createEmailService(config, clock, createLogger(config.LOG_LEVEL), {
      random: () => 0.5,
      ...(options.retryDelaysMs ? { retryDelaysMs: options.retryDelaysMs } : {}),
    });
  });
  const forget = observeService(http.url, "email");
  const { key } = await service.deps.apiKeys.create({ name: "conformance" });
  return {
    url: http.url,
    apiKey: key,
    clock,
    service,
    drain: () => service.readiness.startDraining(),
    settle: async () => {
      // Twice: a report the simulator mails back can only arrive after the copy was sent.
      await service.settle();
      await service.settle();
    },
    close: running(http, service, storage, forget).close,
  };
}
