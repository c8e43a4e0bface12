/**
 * The dashboard's HTML shell and assets (X-ID-ADM-1). The page is static: the browser script
 * `/dashboard/app.js`, bundled from web/dashboard/ (typed TypeScript) by esbuild, does the sign-in
 * (Authorization Code + PKCE as `identity-dashboard`) and every API call. No inline script; the one
 * inline stylesheet is pinned by its hash, so the CSP allows nothing but this origin's script.
 *
 * The bundle is built here, by the running server when it starts (handlers/identity/service.ts), and kept: it is
 * never committed (views/browser-bundle.ts).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { browserBundle } from "./browser-bundle.ts";

const web = new URL("../../../web/dashboard/", import.meta.url);

/** The browser script: web/dashboard/main.ts and what it imports, as one ES module. */
export const dashboardScript = browserBundle(new URL("main.ts", web));

const css = readFileSync(new URL("dashboard.css", web), "utf8");
const cssHash = createHash("sha256").update(css, "utf8").digest("base64");

/**
 * CSP: scripts only from this origin (no inline, no eval), styles only the pinned inline sheet,
 * API calls only to this origin, logos from any https URL, never framed, forms post nowhere else.
 */
export const dashboardCsp = [
  "default-src 'self'",
  "script-src 'self'",
  `style-src 'sha256-${cssHash}'`,
  "img-src 'self' https: data: http://localhost:* http://127.0.0.1:*",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join("; ");

/** Security headers of the page (spec HtmlHeaders). */
export const dashboardHeaders = {
  "Content-Security-Policy": dashboardCsp,
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};

/** The shell: a landmark structure the script fills; works as a plain "signing you in" page without it. */
export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Identity dashboard</title>
<style>${css}</style>
</head>
<body>
<header>
<h1>Identity dashboard</h1>
<nav aria-label="Account" id="account-nav"></nav>
</header>
<main id="app" tabindex="-1">
<p id="status" role="status" aria-live="polite">Signing you in…</p>
<noscript><p>The dashboard needs JavaScript: it signs you in with this server and calls its API from your browser.</p></noscript>
</main>
<script type="module" src="/dashboard/app.js"></script>
</body>
</html>
`;
