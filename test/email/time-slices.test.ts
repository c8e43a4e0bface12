/** time-slices.ts: jobs run many to a turn until the budget is spent; the rest wait for the next turn. */
import { expect, it } from "vitest";
import { timeSlices } from "../../handlers/email/domain/time-slices.ts";

const busy = (ms: number) => {
  for (const end = performance.now() + ms; performance.now() < end; );
};

it("jobs within the budget run in one turn, before what was scheduled after them", async () => {
  // A budget no machine spends on ten pushes, however loaded.
  const slices = timeSlices(1000);
  const order: string[] = [];
  const jobs = Array.from({ length: 10 }, (_, i) => slices(() => order.push(`job ${i}`)));
  setImmediate(() => order.push("other work"));
  await Promise.all(jobs);
  await new Promise((r) => setImmediate(r));
  expect(order.at(-1)).toBe("other work");
});

it("a job that spends the budget ends the turn: other work runs before the next job", async () => {
  const slices = timeSlices(5);
  const order: string[] = [];
  const first = slices(() => {
    busy(10);
    order.push("long job");
  });
  const second = slices(() => order.push("next job"));
  setImmediate(() => order.push("other work"));
  await Promise.all([first, second]);
  expect(order).toEqual(["long job", "other work", "next job"]);
});

it("a job that throws rejects its own promise only", async () => {
  const slices = timeSlices(5);
  const failed = slices(() => {
    throw new Error("bad copy");
  });
  await expect(failed).rejects.toThrow("bad copy");
  expect(await slices(() => 42)).toBe(42);
});
