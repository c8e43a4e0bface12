/**
 * Time-ordered ids (server/ids.ts): UUIDv7s sort as they were made, within one
 * millisecond too, so the rows keyed by them are appended to their B-trees; and the email service
 * gives its messages, their copies (not shown by the API) and their timeline events such ids, so a
 * message is written at the end of its tables and the retention purge deletes the oldest from
 * whole pages.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { uuidv7Generator, uuidv7Floor } from "../../server/ids.ts";
import { emailWorld, type EmailWorld } from "../../conformance/harness/worlds.ts";
import type { EmailTarget } from "../../conformance/harness/targets.ts";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sorted = (ids: string[]) => [...ids].sort();

describe("uuidv7", () => {
  // Each test its own generator: the process's one carries the order of every id made before it.
  let uuidv7: ReturnType<typeof uuidv7Generator>;
  beforeEach(() => {
    uuidv7 = uuidv7Generator();
  });

  it("sorts as made, within a millisecond and across them, and above the floor of its millisecond", () => {
    const t = Date.parse("2026-11-27T03:00:00.000Z");
    const ids = [uuidv7(t), uuidv7(t), uuidv7(t), uuidv7(t + 1), uuidv7(t + 1), uuidv7(t + 5)];
    for (const id of ids) expect(id).toMatch(V7);
    expect(sorted(ids)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids[5]! >= uuidv7Floor(t + 5)).toBe(true);
    expect(ids[4]! < uuidv7Floor(t + 5)).toBe(true);
  });

  it("an earlier time never makes an id that sorts before one already made", () => {
    const t = Date.parse("2026-11-27T03:00:01.000Z");
    const first = uuidv7(t);
    expect(uuidv7(t - 60_000) > first).toBe(true);
  });

  it("a time that is not a number is replaced by now, and does not spoil the ids after it", () => {
    const odd = uuidv7(Number.NaN);
    expect(odd).toMatch(V7);
    const next = uuidv7();
    expect(next).toMatch(V7);
    expect(next > odd).toBe(true);
  });
});

describe("the email service's ids", () => {
  let target: EmailTarget;
  let api: EmailWorld["api"];
  beforeAll(async () => {
    ({ target, api } = await emailWorld());
  });
  afterAll(async () => target?.close());

  it("messages and their timeline events get UUIDv7s, in the order they were made", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const sent = await api().POST("/v1/emails", {
        body: { from: "receipts@shop.example.com", to: [`a${i}@simulator.test`, `b${i}@simulator.test`], subject: "Ids", text: "Hi" },
      });
      expect(sent.response.status).toBe(202);
      ids.push(sent.data!.id);
    }
    for (const id of ids) expect(id).toMatch(V7);
    expect(sorted(ids)).toEqual(ids);

    const got = await api().GET("/v1/emails/{emailId}", { params: { path: { emailId: ids[2]! } } });
    expect(got.response.status).toBe(200);
    const events = got.data!.events.map((e) => e.id);
    expect(events.length).toBeGreaterThanOrEqual(2); // one email.queued per copy
    for (const id of events) expect(id).toMatch(V7);
    expect(sorted(events)).toEqual(events); // the timeline, oldest first, is also the ids' order
  });
});
