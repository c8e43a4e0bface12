/** Starts a Koa app on host:port (0 = a free port) and returns its address and a close function. */
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:http";
import type Koa from "koa";

export interface Listening {
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * `reusePort` (SO_REUSEPORT): several processes listen on the same host:port and the kernel spreads
 * the incoming connections over them (bench/token.ts's BENCH_INSTANCES).
 */
export async function listen(app: Koa, host: string, port: number, options: { reusePort?: boolean } = {}): Promise<Listening> {
  const server = createServer(app.callback());
  // Slow or idle clients must not pin sockets forever.
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, reusePort: options.reusePort ?? false }, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    server,
    port: address.port,
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
