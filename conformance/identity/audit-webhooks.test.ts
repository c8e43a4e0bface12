/**
 * X-ID-AUD-7: the audit log's security events are webhook events. A sign-in and a failed one reach
 * a subscribed webhook of their application, signed like every delivery, with the audit event's
 * fields as `data` and never the password; a webhook of another application receives nothing.
 */
import { verify } from "@octokit/webhooks-methods";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../harness/identity-fixtures.ts";
import { authorizationPath, authorizeWithPassword, Browser, formFields, loginForm, pkcePair } from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import type { TestUser } from "../harness/worlds.ts";
import {
  type Application,
  createApplication,
  createWebhook,
  type Receiver,
  settle,
  startReceiver,
  waitUntil,
  type WebhookWorld,
  webhookWorld,
} from "./webhooks-fixtures.ts";

const REDIRECT_URI = "http://localhost:8080/callback";

let world: WebhookWorld;
let app: Application;
let user: TestUser;
skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld());
  user = await createUser(world.target);
});
afterAll(async () => world?.close());

/** A wrong password on the hosted login page of `app`. */
async function failSignIn(password: string) {
  const browser = new Browser(world.url);
  const { challenge } = pkcePair();
  const start = await browser.get(
    authorizationPath({ clientId: app.clientId, redirectUri: REDIRECT_URI, state: "s", challenge, method: "S256", scope: "openid" }),
  );
  expect(start.status).toBe(200);
  const failed = await browser.post("/oauth/authorize", loginForm(formFields(start.text), { email: user.email, password }));
  expect(failed.status).toBe(400);
}

describe("security events as webhook events", () => {
  let receiver: Receiver;
  let other: Receiver;
  let secret: string;
  beforeAll(async () => {
    if (identityOnDeployment()) return;
    receiver = await startReceiver();
    other = await startReceiver();
    secret = (await createWebhook(world, app.id, { url: receiver.url, events: ["user.signed_in", "user.sign_in_failed"] })).secret;
    const otherApp = await createApplication(world);
    await createWebhook(world, otherApp.id, { url: other.url, events: ["user.signed_in", "user.sign_in_failed"] });
  });
  afterAll(async () => {
    await receiver?.close();
    await other?.close();
  });

  it("X-ID-AUD-7 user.sign_in_failed and user.signed_in reach the application's webhook, signed, with the audit event as data", async () => {
    const wrong = "not-the-password-456";
    await failSignIn(wrong);
    await authorizeWithPassword(world.url, {
      clientId: app.clientId,
      redirectUri: REDIRECT_URI,
      email: user.email,
      password: user.password,
    });
    await waitUntil(
      () => receiver.received.length >= 2,
      5000,
      () => `two deliveries, got ${receiver.received.length}`,
    );

    const byEvent = new Map(receiver.received.map((r) => [r.json.event as string, r]));
    const failed = byEvent.get("user.sign_in_failed")!;
    const signedIn = byEvent.get("user.signed_in")!;
    for (const got of [failed, signedIn]) {
      expect(got.headers["x-webhook-event"]).toBe(got.json.event);
      expect(await verify(secret, got.raw.toString("utf8"), String(got.headers["x-webhook-signature"]))).toBe(true);
      expect(got.json.id).toBe(got.headers["x-webhook-delivery-id"]);
    }
    expect(failed.json.data).toMatchObject({
      actor: { type: "user", id: null },
      userId: user.id,
      applicationId: app.id,
      details: { method: "password", reason: "invalid_credentials", email: user.email },
    });
    expect(signedIn.json.data).toMatchObject({
      actor: { type: "user", id: user.id },
      userId: user.id,
      applicationId: app.id,
      details: { method: "password" },
    });

    // The same event as the audit log holds it.
    const api = await world.api();
    const { data: page } = await api.GET("/api/audit-events", { params: { query: { userId: user.id, type: "user.signed_in" } } });
    expect(page!.items.map((e) => e.id)).toContain(signedIn.json.data.auditEventId);

    const text = receiver.received.map((r) => r.raw.toString("utf8")).join("\n");
    expect(text).not.toContain(wrong);
    expect(text).not.toContain(user.password);
  });

  it("X-ID-AUD-7 a webhook of another application receives none of them", async () => {
    await settle();
    expect(other.received).toEqual([]);
  });

  it("X-ID-AUD-7 the catalogue lists the security events after the three user events", async () => {
    const api = await world.api();
    const { data } = await api.GET("/api/applications/{appId}/webhooks/events", { params: { path: { appId: app.id } } });
    const events = data!.items.map((i) => i.event);
    expect(events.slice(0, 3)).toEqual(["user.created", "user.updated", "user.deleted"]);
    expect(events).toEqual(expect.arrayContaining(["user.signed_in", "user.sign_in_failed", "session.ended", "user.factor_enrolled"]));
  });
});
