/** support/free-port.ts: ports below the ephemeral range, and the error a lost race gives. */
import { createServer } from "node:net";
import { expect, test } from "vitest";
import { freePort, isAddressInUse } from "../../support/free-port.ts";

const listenOn = (port: number) =>
  new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });

test("a free port is drawn below Linux's ephemeral range, and can be listened on", async () => {
  const ports = await Promise.all([freePort(), freePort(), freePort()]);
  for (const port of ports) expect(port).toBeGreaterThanOrEqual(20_000), expect(port).toBeLessThan(32_768);
  expect(new Set(ports).size).toBe(3); // get-port never hands one process the same port twice in a row
  const server = await listenOn(ports[0]);
  server.close();
});

test("listening on a taken port is recognised as EADDRINUSE, other errors are not", async () => {
  const port = await freePort();
  const holder = await listenOn(port);
  const error = await listenOn(port).then(
    (s) => (s.close(), undefined),
    (e: unknown) => e,
  );
  holder.close();
  expect(isAddressInUse(error)).toBe(true);
  expect(isAddressInUse(new Error("other"))).toBe(false);
});
