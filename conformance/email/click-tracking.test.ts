/**
 * X-EM-28 click tracking in proportion to what is stored: a message's tracked destinations are
 * stored once (at most 1000, the rest of its links stay as written), and a copy's click URL carries a
 * signed token naming the copy and the destination, so nothing is stored per copy and link. Click
 * links mailed before (a random token stored per copy and link) keep working.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus } from "../harness/api.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import type { EmailTarget } from "../harness/targets.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";

let target: EmailTarget;
let api: EmailWorld["api"];
let n = 0;
const sim = (local: string) => `${local}+clicks${Date.now().toString(36)}${++n}@simulator.test`;
const receipt = { from: "receipts@shop.example.com", subject: "Your receipt" };

beforeAll(async () => {
  ({ target, api } = await emailWorld());
});
afterAll(async () => target?.close());

const send = (to: string[], html: string) =>
  expectStatus(api().POST("/v1/emails", { body: { ...receipt, to, html, tracking: { clicks: true } } }), 202, "send");
const rendered = (emailId: string, recipient: string) =>
  expectStatus(
    api().GET("/v1/emails/{emailId}/recipients/{recipient}/content", { params: { path: { emailId, recipient } } }),
    200,
    "rendered copy",
  );
const click = (url: string) => fetch(url, { redirect: "manual" });
const clickedEvents = async (emailId: string) =>
  (await expectStatus(api().GET("/v1/emails/{emailId}", { params: { path: { emailId } } }), 200, "read")).events.filter(
    (e) => e.type === "email.clicked",
  );
/** A body with a link to each of `count` destinations, `/p/0` to `/p/<count - 1>`. */
const links = (count: number) =>
  `<html><body>${Array.from({ length: count }, (_, i) => `<a href="https://shop.example.com/p/${i}">Item ${i}</a>`).join(" ")}</body></html>`;

describe("X-EM-28 click links", () => {
  it("X-EM-28 only the first 1000 distinct destinations of a message are tracked: links to later ones stay as written, and a destination linked twice shares one click URL", async () => {
    const to = sim("delivered");
    const html = links(1002).replace("</body>", '<a href="https://shop.example.com/p/0">again</a></body>');
    const sent = await send([to], html);
    await target.settle();
    const copy = await rendered(sent.id, to);
    expect(copy.links.map((l) => l.url)).toEqual(Array.from({ length: 1000 }, (_, i) => `https://shop.example.com/p/${i}`));
    expect(copy.html).toContain('<a href="https://shop.example.com/p/1000">Item 1000</a>');
    expect(copy.html).toContain('<a href="https://shop.example.com/p/1001">Item 1001</a>');
    expect(copy.html!.split(copy.links[0]!.trackingUrl)).toHaveLength(3);
    const last = await click(copy.links[999]!.trackingUrl);
    expect(last.status).toBe(302);
    expect(last.headers.get("location")).toBe("https://shop.example.com/p/999");
  });

  it("X-EM-28 a click URL's token is signed and names its copy: each copy's differ, one changed character is the unknown-link page, and each copy's first click is its own event", async () => {
    const [a, b] = [sim("delivered"), sim("delivered")];
    const sent = await send([a, b], '<p><a href="https://shop.example.com/orders/7">order</a></p>');
    await target.settle();
    const [urlA, urlB] = await Promise.all([a, b].map(async (r) => (await rendered(sent.id, r)).links[0]!.trackingUrl));
    const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
    expect(tokenOf(urlA!)).toMatch(/^[A-Za-z0-9_-]{47}$/);
    expect(tokenOf(urlB!)).not.toBe(tokenOf(urlA!));

    // A character of the signature, and one of the copy's id, changed: no such link.
    for (const at of [40, 5]) {
      const token = tokenOf(urlA!);
      const forged = token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
      const answer = await click(`${target.url}/v1/track/click/${forged}`);
      expect(answer.status, `changed at ${at}`).toBe(404);
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    }

    for (const url of [urlA!, urlA!, urlB!]) {
      const answer = await click(url);
      expect(answer.status).toBe(302);
      expect(answer.headers.get("location")).toBe("https://shop.example.com/orders/7");
    }
    const events = await clickedEvents(sent.id);
    expect(events.map((e) => e.recipient).sort()).toEqual([a, b].sort());
  });

  it("X-EM-28 a click link mailed before links were stored per message (its token stored per copy and link) still redirects and records its click", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.database);
    const { db } = target.service;
    const to = sim("delivered");
    const sent = await send([to], '<p><a href="https://shop.example.com/old">old</a></p>');
    // As a message accepted before migration 0009 left it: no stored destinations, a token per copy and link.
    const copy = (await db("email_recipients").where({ email_id: sent.id }).first()) as { id: string };
    await db("message_links").where({ email_id: sent.id }).delete();
    const token = randomBytes(16).toString("base64url");
    await db("email_links").insert({ token, recipient_id: copy.id, position: 0, url: "https://shop.example.com/old" });
    await target.settle();

    const shown = await rendered(sent.id, to);
    expect(shown.links).toEqual([{ url: "https://shop.example.com/old", trackingUrl: `${target.url}/v1/track/click/${token}` }]);
    expect(shown.html).toContain(`href="${target.url}/v1/track/click/${token}"`);
    const answer = await click(shown.links[0]!.trackingUrl);
    expect(answer.status).toBe(302);
    expect(answer.headers.get("location")).toBe("https://shop.example.com/old");
    expect(await clickedEvents(sent.id)).toHaveLength(1);
  });
});
