/**
 * The frame of every hosted page: server-rendered, working without script (the pages with a passkey
 * form add its one script, shared/passkey-pages.ts), accessible (landmarks, labelled inputs, visible
 * focus), responsive (one column, fluid width), branded with the application's colours and logo
 * when configured.
 */
export const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export interface Branding {
  logoUrl?: string;
  primaryColor?: string;
  secondaryColor?: string;
}

const HEX = /^#[0-9A-Fa-f]{6}$/;
const DEFAULT_PRIMARY = "#1f5fbf";
const DEFAULT_SECONDARY = "#f4f6fa";

/** Colours go into CSS: only a strict `#RRGGBB` is ever interpolated. */
const colour = (value: string | undefined, fallback: string) => (value && HEX.test(value) ? value : fallback);

export function layout(o: { title: string; branding?: Branding; applicationName?: string; main: string }): string {
  const primary = colour(o.branding?.primaryColor, DEFAULT_PRIMARY);
  const secondary = colour(o.branding?.secondaryColor, DEFAULT_SECONDARY);
  const logo =
    o.branding?.logoUrl && /^https?:\/\//.test(o.branding.logoUrl)
      ? `<img class="logo" src="${escapeHtml(o.branding.logoUrl)}" alt="${escapeHtml(o.applicationName ?? "")} logo" width="64" height="64">`
      : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(o.title)}</title>
<style>
:root { --primary: ${primary}; --secondary: ${secondary}; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--secondary); color: #1b1f24; }
main { max-width: 26rem; margin: 2rem auto; padding: 1.5rem; background: #fff; border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.12); }
@media (max-width: 30rem) { main { margin: 0; border-radius: 0; min-height: 100vh; } }
h1 { font-size: 1.4rem; margin: .5rem 0 1rem; }
.logo { display: block; margin: 0 auto; max-width: 64px; max-height: 64px; }
label { display: block; font-weight: 600; margin-top: .75rem; }
input[type=email], input[type=password], input[type=text] { width: 100%; padding: .6rem; margin-top: .25rem; border: 1px solid #8a94a6; border-radius: 6px; font: inherit; }
button, .button { display: block; width: 100%; margin-top: 1rem; padding: .7rem; border: 0; border-radius: 6px; font: inherit; font-weight: 600; text-align: center; text-decoration: none; cursor: pointer; background: var(--primary); color: #fff; }
.secondary { background: #fff; color: var(--primary); border: 1px solid var(--primary); }
:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
[role=alert] { padding: .6rem; border-radius: 6px; background: #fdecea; color: #8a1c10; }
ul.scopes { padding-left: 1.2rem; }
.social { margin-top: 1rem; }
.muted { color: #4a5568; font-size: .9rem; }
</style>
</head>
<body>
<main>
${logo}
${o.main}
</main>
</body>
</html>
`;
}

/** A hidden input. */
export const hidden = (name: string, value: string) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;

/** A paragraph announced to screen readers. */
export const alert = (message: string | undefined) => (message ? `<p role="alert">${escapeHtml(message)}</p>` : "");
