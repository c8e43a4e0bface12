/**
 * A plain HTTP receiver on 127.0.0.1 for the tests of the file or `describe` block that calls it:
 * answers 200 "ok" to everything and counts what reached it, so a test can tell that a guard
 * refused a connection before anything was sent.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";

export interface OkReceiver {
  /** Its port, once the block's tests run. */
  port: number;
  /** Requests received so far. */
  hits: number;
}

export function okReceiver(): OkReceiver {
  const receiver: OkReceiver = { port: 0, hits: 0 };
  let server: Server;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      receiver.hits++;
      res.writeHead(200).end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    receiver.port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return receiver;
}
