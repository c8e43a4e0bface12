/**
 * A static file server for the single-page app of the browser tests (test/support/browser/spa.js):
 * one HTML shell for `/` and `/callback`, the script, oauth4webapi as the page imports it, and a
 * blank page (`/blank`). Each instance listens on its own 127.0.0.1 port, so each is an origin of
 * its own.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { fileURLToPath } from "node:url";

const SCRIPT = readFileSync(fileURLToPath(new URL("./spa.js", import.meta.url)), "utf8");
const LIBRARY = readFileSync(fileURLToPath(new URL("../../../node_modules/oauth4webapi/build/index.js", import.meta.url)), "utf8");
const escapeAttribute = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface SpaServer {
  /** This page's origin, e.g. http://127.0.0.1:41234. */
  origin: string;
  /** The identity service and the public client the page uses. */
  /** `resource`: the API's base URL the page calls; `audience`: its RFC 8707 resource indicator, asked for at sign-in. */
  configure(settings: { issuer: string; clientId: string; resource?: string; audience?: string }): void;
  close(): Promise<void>;
}

export async function startSpaServer(): Promise<SpaServer> {
  let settings: Parameters<SpaServer["configure"]>[0] = { issuer: "", clientId: "" };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const send = (type: string, body: string) =>
      res.writeHead(200, { "content-type": `${type}; charset=utf-8`, "cache-control": "no-store" }).end(body);
    if (path === "/" || path === "/callback") {
      return send(
        "text/html",
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Notes (single-page app)</title></head>` +
          `<body data-issuer="${escapeAttribute(settings.issuer)}" data-client-id="${escapeAttribute(settings.clientId)}" data-resource="${escapeAttribute(settings.resource ?? "")}" data-audience="${escapeAttribute(settings.audience ?? "")}">` +
          `<main><h1>Notes (single-page app)</h1><p id="status" role="status">Starting…</p></main>` +
          `<script type="module" src="/spa.js"></script></body></html>`,
      );
    }
    // A page of this origin without the app, for fetches run by the test in the page.
    if (path === "/blank")
      return send(
        "text/html",
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Blank</title></head><body></body></html>`,
      );
    if (path === "/spa.js") return send("text/javascript", SCRIPT);
    if (path === "/oauth4webapi.js") return send("text/javascript", LIBRARY);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    configure: (s) => void (settings = s),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
