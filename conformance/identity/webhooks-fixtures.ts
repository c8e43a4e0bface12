/**
 * Fixtures of the webhook suites: an in-process identity service configured for fast webhook tests
 * (short time-out and poll interval, http and 127.0.0.1 receivers allowed), an admin token, an
 * application, real HTTP receivers that record what they get, and ways to raise user events.
 *
 * Time: retries are scheduled by the service's clock. Tests move `target.clock` past
 * `retryDelaySeconds`; the dispatcher (polling every 20 ms of real time) then finds the attempt due.
 * Nothing waits for a real retry delay.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { identityTarget, uniqueEmail, type IdentityTarget } from "../harness/targets.ts";
import type { components } from "../../generated/sdk/types/identity.ts";
import { expectStatus, identityApi, type IdentityApi } from "../harness/api.ts";
import type { UserEventType } from "../../handlers/identity/domain/events.ts";
import { observeReceiver } from "../harness/contract-recorder.ts";

/**
 * Configuration of the service under test: the short time-out stands in for the seed's 30 s. Two
 * seconds, not less: a receiver's immediate answer must never be taken for a time-out when the
 * machine is loaded (at 500 ms one did, under a load of 8 on 2 cores: a retry nobody asked for).
 */
export const WEBHOOK_TEST_ENV = {
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1",
  WEBHOOK_REQUIRE_HTTPS: "false",
  WEBHOOK_POLL_INTERVAL_MS: "20",
};

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  json: any;
  at: number;
}

export type Answer = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | "hang" | "destroy";

/**
 * A webhook receiver on 127.0.0.1 that records every request and answers as told (default 204).
 * `contract` is the receiver document it plays, for contract coverage (harness/contract-recorder.ts).
 */
export async function startReceiver(
  answer: (req: Received, index: number) => Answer = () => ({ status: 204 }),
  contract = "identity-webhooks",
) {
  const received: Received[] = [];
  const hanging = new Set<import("node:http").ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let json: any;
      try {
        json = JSON.parse(raw.toString("utf8"));
      } catch {
        json = undefined;
      }
      const entry: Received = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, raw, json, at: Date.now() };
      received.push(entry);
      const a = answer(entry, received.length - 1);
      if (a === "hang") {
        hanging.add(res);
        return;
      }
      if (a === "destroy") {
        req.socket.destroy();
        return;
      }
      const send = () => {
        res.writeHead(a.status, a.headers);
        res.end(a.body);
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  observeReceiver(server, contract);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** Waits (real time) until `count` requests arrived. */
    waitFor: (count: number, timeoutMs = 5000) =>
      waitUntil(
        () => received.length >= count,
        timeoutMs,
        () => `receiver got ${received.length} of ${count} requests`,
      ),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export async function waitUntil(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what: () => string = () => "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Real time passes without anything arriving (for "no delivery" checks, after the dispatcher had time to act). */
export const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

export interface WebhookWorld {
  target: IdentityTarget;
  url: string;
  organizationId: string;
  /** A fresh admin token (tests move the clock past the 1-hour lifetime of any one token). */
  token(): Promise<string>;
  /** A typed client with a fresh admin token. */
  api(): Promise<IdentityApi>;
  close(): Promise<void>;
}

/** The identity service with an organization, an admin token of the dashboard client and an application of the organization. */
export async function webhookWorld(env: Record<string, string> = {}): Promise<WebhookWorld & { app: Application }> {
  const target = await identityTarget({ env: { ...WEBHOOK_TEST_ENV, ...env } });
  if (!target.service || !target.createOrganization) throw new Error("the webhook suites need the in-process identity service");
  const { organizationId, token } = await organizationWithToken(target);
  const api = async () => identityApi(target, { token: await token() });
  const world: WebhookWorld = { target, url: target.url, organizationId, token, api, close: () => target.close() };
  return { ...world, app: await createApplication(world) };
}

export type Application = Awaited<ReturnType<typeof createApplication>>;

/**
 * A new organization and an access token of its admin for the dashboard client, minted in-process
 * (the token the dashboard's Authorization Code + PKCE sign-in would get, X-ID-ADM-1).
 */
export async function organizationWithToken(target: IdentityTarget) {
  const { organizationId, admin } = await target.createOrganization!();
  const token = async () =>
    (await target.service!.ctx.accessTokens.issue({ userId: admin.userId, clientId: "identity-dashboard", scopes: ["openid"] })).token;
  return { organizationId, token };
}

/**
 * An application of the organization: created over HTTP (`POST /api/applications`) when the
 * service has it, else inserted through the applications store (fixture only).
 */
export async function createApplication(world: WebhookWorld, org: { organizationId: string; token(): Promise<string> } = world) {
  const { organizationId } = org;
  const name = `App ${randomBytes(3).toString("hex")}`;
  const { data } = await identityApi(world, { token: await org.token() }).POST("/api/applications", {
    body: { name, clientType: "public", redirectUris: ["http://localhost:8080/callback"], allowedScopes: ["openid", "profile", "email"] },
  });
  if (data) return { id: data.id, clientId: data.clientId, name };
  const now = new Date().toISOString();
  const id = randomUUID();
  const clientId = `app-${randomBytes(6).toString("hex")}`;
  await world.target.service!.ctx.storage.applications.insert({
    id,
    organization_id: organizationId,
    name,
    client_id: clientId,
    client_type: "public",
    redirect_uris: JSON.stringify(["http://localhost:8080/callback"]),
    allowed_scopes: JSON.stringify(["openid", "profile", "email"]),
    enabled_providers: "[]",
    branding: "{}",
    first_party: false,
    created_at: now,
    updated_at: now,
  });
  return { id, clientId, name };
}

/** Creates a webhook over HTTP and returns its body (with the secret). */
export async function createWebhook(world: WebhookWorld, appId: string, body: components["schemas"]["WebhookCreate"]) {
  const api = identityApi(world, { token: await world.token() });
  return expectStatus(api.POST("/api/applications/{appId}/webhooks", { params: { path: { appId } }, body }), 201, "create webhook");
}

/**
 * Raises a user event the way the service does: inside a transaction, through the service's event
 * sink (the outbox write). Used where the users API cannot trigger the event by itself.
 */
export async function publishEvent(world: WebhookWorld, type: UserEventType, applicationIds: string[], data: Record<string, unknown>) {
  const service = world.target.service!;
  await service.db.transaction((trx) => service.ctx.events.publish(trx, { type, applicationIds, data }));
}

export const userData = () => ({ userId: randomUUID(), email: uniqueEmail("hook"), firstName: "Ada", lastName: "Lovelace" });

/** Delivery history of a webhook (all pages). */
export async function history(world: WebhookWorld, appId: string, webhookId: string) {
  const api = identityApi(world, { token: await world.token() });
  const page = await expectStatus(
    api.GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", {
      params: { path: { appId, webhookId }, query: { pageSize: 100 } },
    }),
    200,
    "history",
  );
  return page.items;
}

/** Waits until the history shows `count` attempts (they are written right after each attempt). */
export async function waitForHistory(world: WebhookWorld, appId: string, webhookId: string, count: number, timeoutMs = 5000) {
  let items: any[] = [];
  await waitUntil(
    async () => (items = await history(world, appId, webhookId)).length >= count,
    timeoutMs,
    () => `history has ${items.length} of ${count} attempts`,
  );
  return items;
}
