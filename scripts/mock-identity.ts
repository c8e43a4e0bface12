/**
 * A real identity service for `npm run mock`: Prism can mock every operation but cannot run an
 * OAuth flow (its discovery document names the real service's port, and its redirects ignore the
 * request's `redirect_uri` and `state`), so a front end signs in against this instead. It is the
 * service itself (handlers/identity/service.ts) on its own port, with a fresh SQLite database in a
 * temporary folder (deleted when it stops) seeded with a documented demo organization, admin,
 * user and public client: Authorization Code + PKCE, refresh tokens, ID tokens, UserInfo, the
 * hosted login and the dashboard all behave as in production.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../support/free-port.ts";
import { createIdentityService } from "../handlers/identity/service.ts";
import { createOrganizationWithAdmin } from "../handlers/identity/domain/accounts/bootstrap.ts";
import { systemClock } from "../server/clock.ts";
import { readConfig } from "../server/config.ts";
import { identityConfig } from "../handlers/identity/config.ts";
import { listen } from "../server/http/listen.ts";
import { createLogger } from "../server/logger.ts";

/** What the demo instance is seeded with; docs/contributing.md, "Mocks", lists the same. */
export const DEMO = {
  organization: "Demo Organization",
  /** The organization's admin: signs in to /dashboard. */
  admin: { email: "admin@demo.example", password: "demo-admin-password", firstName: "Grace", lastName: "Admin" },
  /** A user of the demo application, email verified. */
  user: { email: "ada@demo.example", password: "demo-user-password", firstName: "Ada", lastName: "Lovelace" },
  /** The public client (no secret: PKCE) a single-page app uses. */
  client: {
    clientId: "demo-spa",
    name: "Demo single-page app",
    /** Loopback redirect URIs match on any port (RFC 8252 §7.3): `/callback` and `/` on localhost and 127.0.0.1. */
    redirectUris: ["http://localhost:5173/callback", "http://127.0.0.1:5173/callback", "http://localhost:5173/", "http://127.0.0.1:5173/"],
    /** Origins whose pages may call the token endpoint and UserInfo (CORS): common dev-server ports. */
    origins: [5173, 3000, 4200, 8080].flatMap((port) => [`http://localhost:${port}`, `http://127.0.0.1:${port}`]),
    scopes: ["openid", "profile", "email", "offline_access"],
  },
  /**
   * The repository API as the demo client's resource (RFC 8707, X-ID-RES-1): a token asked for with
   * `resource` and this scope is one the repository mock takes (X-MOCK-5), as a repository service
   * that trusts this issuer would.
   */
  repository: { resource: "https://repository.demo.example", scope: "repository" },
} as const;

export interface DemoIdentity {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the demo identity service on 127.0.0.1:port (0: any free port). `origins` replaces the
 * client's browser origins (CORS_ORIGINS in `npm run mock`), `redirectUris` its redirect URIs.
 */
export async function startDemoIdentity(o: {
  port: number;
  origins?: readonly string[];
  redirectUris?: readonly string[];
  logLevel?: string;
}): Promise<DemoIdentity> {
  const dataDir = mkdtempSync(join(tmpdir(), "mock-identity-"));
  try {
    // The issuer must be the URL clients use: with port 0, reserve a free port first.
    const port = o.port || (await freePort());
    const url = `http://127.0.0.1:${port}`;
    const config = readConfig(
      {
        HOST: "127.0.0.1",
        IDENTITY_PORT: String(port),
        IDENTITY_PUBLIC_URL: url,
        DATA_DIR: dataDir,
        LOG_LEVEL: o.logLevel ?? "warn",
        // Development receivers on this machine may take webhooks.
        WEBHOOK_REQUIRE_HTTPS: "false",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      },
      [identityConfig],
    );
    const service = await createIdentityService(config, systemClock, createLogger(config.LOG_LEVEL, "mock-identity"));
    const { storage } = service.ctx;
    const { organization } = await createOrganizationWithAdmin(storage, systemClock, {
      organizationName: DEMO.organization,
      ...DEMO.admin,
    });
    const { application } = await service.deps.accounts.createApplication(organization.id, {
      name: DEMO.client.name,
      clientType: "public",
      redirectUris: [...(o.redirectUris ?? DEMO.client.redirectUris)],
      allowedScopes: [...DEMO.client.scopes],
      allowedOrigins: [...(o.origins?.length ? o.origins : DEMO.client.origins)],
      resources: [DEMO.repository.resource],
      apiScopes: [DEMO.repository.scope],
    });
    // Client ids are random (`<slug>-<16 characters>`); the demo's is fixed so that a front end's
    // development configuration can name it. Nothing else refers to the client id.
    await storage.applications.update(application.id, { client_id: DEMO.client.clientId });
    await service.deps.accounts.registerUser({ clientId: DEMO.client.clientId, ...DEMO.user, emailVerified: true });
    const http = await listen(service.app, "127.0.0.1", port);
    return {
      url,
      stop: async () => {
        await http.close();
        await service.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
