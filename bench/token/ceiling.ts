/**
 * The ceiling: a bare Koa endpoint that only parses the form (the same body parser our app
 * uses, server/http/body.ts) and answers a small JSON body. No routing, no validation, no storage, no crypto: what a
 * Koa token endpoint can do at most on this machine.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Koa from "koa";
import { bodyParser } from "../../server/http/body.ts";
import type { BenchServer } from "./protocol.ts";

export async function startCeiling(): Promise<BenchServer> {
  const app = new Koa();
  app.use(bodyParser({ limitBytes: 65_536 }));
  app.use(async (ctx) => {
    const form = ctx.request.body as Record<string, unknown>;
    ctx.set("Cache-Control", "no-store");
    ctx.body = { ok: typeof form.grant_type === "string" };
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tokenPath: "/token",
    client: { clientId: "ceiling", clientSecret: "ceiling", redirectUri: "https://client.example.com/callback" },
    notes: "Koa + the app's body parser (form) answering {ok}: no routing, validation, storage or signing",
    // Any string parses the same: the ceiling never looks at the code.
    mintCodes: async (count) => Array.from({ length: count }, () => ({ code: "c".repeat(43), verifier: "v".repeat(43) })),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
