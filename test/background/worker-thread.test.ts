/**
 * server/background/worker-thread.ts with its thread half (thread-side.ts), through a test worker
 * module (test-worker.js): answers matched to their requests, errors with their code,
 * transfers, a thread's hello, starting on demand and again after a death, and the graceful stop.
 */
import { describe, expect, it } from "vitest";
import { startWorkerThread } from "../../server/background/worker-thread.ts";

const url = new URL("./test-worker.js", import.meta.url);

describe("worker thread", () => {
  it("answers each request with its own answer, out of order too; an error keeps its code and names the thread", async () => {
    const thread = startWorkerThread({ url, name: "the test thread", start: "on-demand" });
    try {
      const slow = thread.request({ op: "after", ms: 50, value: "slow" });
      const quick = thread.request({ op: "echo", value: { n: 1 } });
      expect(await quick).toEqual({ n: 1 });
      expect(await slow).toBe("slow");
      const failed = await thread.request({ op: "fail" }).catch((err: Error & { code?: string }) => err);
      expect(failed).toBeInstanceOf(Error);
      expect((failed as Error).message).toBe("the test thread: refused");
      expect((failed as { code?: string }).code).toBe("E_REFUSED");
      const bytes = await thread.request<Uint8Array>({ op: "bytes", size: 1024 });
      expect(bytes.length).toBe(1024);
      expect(bytes[1023]).toBe(7);
    } finally {
      await thread.terminate();
    }
  });

  it("on demand: starts with the first request; one that dies fails what it held, and the next request starts another", async () => {
    let starts = 0;
    const thread = startWorkerThread({ url, name: "the test thread", start: "on-demand", onStart: () => starts++ });
    try {
      expect(starts).toBe(0);
      expect(await thread.request({ op: "echo", value: 1 })).toBe(1);
      expect(starts).toBe(1);
      const held = thread.request({ op: "after", ms: 10_000, value: "never" });
      await expect(thread.request({ op: "exit" })).rejects.toThrow(/the test thread exited \(code 3\)/);
      await expect(held).rejects.toThrow(/exited/);
      expect(await thread.request({ op: "echo", value: 2 })).toBe(2);
      expect(starts).toBe(2);
    } finally {
      await thread.terminate();
    }
  });

  it("started now with a hello: ready gives the checked hello; a refused or failed opening fails every request for good", async () => {
    const ok = startWorkerThread({
      url,
      name: "the test thread",
      start: "now",
      workerData: { open: "hello" },
      checkHello: (hello) => (hello as { greeting: string }).greeting,
    });
    expect(await ok.ready).toBe("hello");
    expect(await ok.request({ op: "echo", value: 3 })).toBe(3);
    await ok.stop();

    const refused = startWorkerThread({
      url,
      name: "the test thread",
      start: "now",
      workerData: { open: "hello" },
      checkHello: () => {
        throw new Error("not FULL");
      },
    });
    await expect(refused.ready).rejects.toThrow("not FULL");
    await expect(refused.request({ op: "echo", value: 4 })).rejects.toThrow("not FULL");
    await refused.stop();

    const failed = startWorkerThread({ url, name: "the test thread", start: "now", workerData: { open: "fail" }, checkHello: (h) => h });
    await expect(failed.ready).rejects.toThrow("the test thread: cannot open the test database");
    await expect(failed.request({ op: "echo", value: 5 })).rejects.toThrow("cannot open the test database");
    await failed.stop();
  });

  it("started now, a thread that died is not replaced: later requests fail with its end", async () => {
    let exits = 0;
    const thread = startWorkerThread({ url, name: "the test thread", start: "now", onExit: () => exits++ });
    await expect(thread.request({ op: "exit" })).rejects.toThrow(/exited \(code 3\)/);
    await expect(thread.request({ op: "echo", value: 6 })).rejects.toThrow(/exited \(code 3\)/);
    expect(exits).toBe(1);
  });

  it("stop lets the thread answer what it was sent before, then it exits", async () => {
    let exits = 0;
    const thread = startWorkerThread({ url, name: "the test thread", start: "now", onExit: () => exits++ });
    const answered = thread.request({ op: "after", ms: 30, value: "answered" });
    await thread.ready;
    await new Promise((resolve) => setImmediate(resolve));
    const stopped = thread.stop();
    expect(await answered).toBe("answered");
    await stopped;
    expect(exits).toBe(1);
  });
});
