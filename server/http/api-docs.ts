/**
 * A service's own API reference (X-API-15; X-ID-DOC-1 for identity): Redoc's standalone bundle
 * from the npm package `redoc`, rendering the service's generated OpenAPI document, everything
 * from the service's own origin: no CDN, so it works on a machine without internet.
 *
 * The page is static: the `<redoc spec-url>` element and the bundle, which starts itself on it
 * (no inline script, so `script-src 'self'` holds). Everything is read once, at start.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parse } from "yaml";

const require = createRequire(import.meta.url);

/**
 * Redoc injects its styles and runs its search index in a worker made from a blob; it fetches the
 * document from this origin. Images only from here: the bundle's footer would fetch Redocly's
 * logo from their CDN, which this blocks before any request leaves the browser.
 */
export const API_REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const PAGE_CACHE = "public, max-age=300";
const SCRIPT_CACHE = "public, max-age=86400";

let redocBundle: string | undefined;
/** The bundle (about 1 MB), read on first use and shared by every service of the process. */
function redocScript(): string {
  redocBundle ??= readFileSync(require.resolve("redoc/bundles/redoc.standalone.js"), "utf8");
  return redocBundle;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The four answers of a service's reference: the page at `/docs`, the bundle at
 * `/docs/redoc.standalone.js`, and the document at `/openapi.yaml` and `/openapi.json`.
 */
export function apiReference(o: { title: string; definitionPath: string }) {
  const yamlText = readFileSync(o.definitionPath, "utf8");
  const document = parse(yamlText) as Record<string, unknown>;
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(o.title)} API reference</title>
</head>
<body>
<redoc spec-url="/openapi.yaml"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;
  return {
    page: () => ({
      status: 200 as const,
      body: html,
      contentType: "text/html; charset=utf-8",
      headers: { "Content-Security-Policy": API_REFERENCE_CSP, "Cache-Control": PAGE_CACHE },
    }),
    script: () => ({
      status: 200 as const,
      body: redocScript(),
      contentType: "text/javascript; charset=utf-8",
      headers: { "Cache-Control": SCRIPT_CACHE },
    }),
    yaml: () => ({
      status: 200 as const,
      body: yamlText,
      contentType: "application/yaml; charset=utf-8",
      headers: { "Cache-Control": PAGE_CACHE },
    }),
    json: () => ({ status: 200 as const, body: document, headers: { "Cache-Control": PAGE_CACHE } }),
  };
}
