/**
 * An https server on 127.0.0.1 that serves logos, standing in for an application's CDN. Branding
 * logos are https URLs in production, and the hosted pages' CSP allows images from `https:` only
 * (besides the identity origin itself), so the test serves them the same way: a self-signed
 * certificate made by openssl for 127.0.0.1, trusted by the browser context (`ignoreHTTPSErrors`).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LogoServer {
  url: string;
  /** The URL of a round logo of that colour (`#RRGGBB`): a 64 x 64 SVG. */
  logoUrl(colour: string): string;
  close(): Promise<void>;
}

function selfSignedCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "logo-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startLogoServer(): Promise<LogoServer> {
  const server: Server = createServer(selfSignedCertificate(), (req, res) => {
    const colour = /^\/logo-([0-9a-f]{6})\.svg$/i.exec(req.url ?? "")?.[1];
    if (!colour) return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "image/svg+xml", "cache-control": "no-store" });
    res.end(
      `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64"><circle cx="32" cy="32" r="30" fill="#${colour}"/></svg>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const url = `https://127.0.0.1:${port}`;
  return {
    url,
    logoUrl: (colour) => `${url}/logo-${colour.replace(/^#/, "")}.svg`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
