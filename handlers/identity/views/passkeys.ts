/**
 * The passkey pages (X-ID-PK-1, X-ID-PK-6, X-ID-PK-7): the account's passkeys and the login page's
 * "Sign in with a passkey". Each passkey form names its options endpoint in `data-options`; the one
 * script (/assets/passkeys.js) asks it for the options, runs the ceremony, puts the answer in the
 * hidden `credential` field and submits. Without the script, or without WebAuthn, the forms stay
 * hidden and the message saying so stays shown.
 */
import { alert, escapeHtml, hidden, layout } from "./layout.ts";

/** Where the script is served: the CSP of the passkey pages names exactly this path (X-ID-PK-7). */
export const PASSKEYS_SCRIPT_PATH = "/assets/passkeys.js";

const scriptTag = `<script type="module" src="${PASSKEYS_SCRIPT_PATH}"></script>`;

export interface PasskeyListItem {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

const day = (iso: string | null) => (iso ? escapeHtml(iso.slice(0, 10)) : "never");

function passkeyRow(p: PasskeyListItem, csrfToken: string, hasPassword: boolean): string {
  const id = encodeURIComponent(p.id);
  const confirm = hasPassword
    ? `<label for="password-${id}">Current password</label><input id="password-${id}" name="password" type="password" autocomplete="current-password" required maxlength="1024">`
    : "";
  return `<tr><td>${escapeHtml(p.name)}</td><td>${day(p.createdAt)}</td><td>${day(p.lastUsedAt)}</td></tr>
<tr><td colspan="3">
<details><summary>Rename or remove ${escapeHtml(p.name)}</summary>
<form method="post" action="/account/passkeys/${id}/rename">${hidden("csrf_token", csrfToken)}
<label for="name-${id}">New name</label><input id="name-${id}" name="name" type="text" required maxlength="64" value="${escapeHtml(p.name)}">
<button class="secondary" type="submit">Rename</button></form>
<form method="post" action="/account/passkeys/${id}/remove">${hidden("csrf_token", csrfToken)}${confirm}
<button class="secondary" type="submit">Remove</button></form>
</details></td></tr>`;
}

export function passkeysPage(v: {
  csrfToken: string;
  email: string;
  passkeys: PasskeyListItem[];
  hasPassword: boolean;
  error?: string;
}): string {
  const list = v.passkeys.length
    ? `<table><caption>Your passkeys</caption><thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th></tr></thead><tbody>
${v.passkeys.map((p) => passkeyRow(p, v.csrfToken, v.hasPassword)).join("\n")}
</tbody></table>`
    : "<p>You have no passkeys yet.</p>";
  return layout({
    title: "Your passkeys",
    main: `<h1>Your passkeys</h1>
<p class="muted">Signed in as ${escapeHtml(v.email)}. A passkey signs you in with this device's screen lock instead of a password.</p>
<nav class="muted"><a href="/account">Your account</a> · <a href="/account/security">Security</a></nav>
${alert(v.error)}
${list}
<p id="passkey-unavailable" role="status">Adding a passkey needs a browser that supports passkeys, with JavaScript on.</p>
<form method="post" action="/account/passkeys" data-passkey="register" data-options="/account/passkeys/options" data-unavailable="passkey-unavailable" hidden>
${hidden("csrf_token", v.csrfToken)}<input type="hidden" name="credential" value="">
<label for="passkey-name">Name of the new passkey</label>
<input id="passkey-name" name="name" type="text" maxlength="64" value="Passkey">
<button type="submit">Add a passkey</button>
<p class="muted" data-passkey-status role="status"></p>
</form>
${scriptTag}`,
  });
}

/** The account pages without a session. */
export const notSignedInPage = () =>
  layout({
    title: "Your passkeys",
    main: "<h1>You are not signed in</h1>\n<p>Sign in to an application first, then come back to this page.</p>",
  });

/** The login page's passkey sign-in (X-ID-PK-3): hidden until the script finds WebAuthn. */
export function passkeySignInBlock(v: { csrfToken: string; requestId: string }): string {
  return `<form method="post" action="/oauth/authorize/passkey" data-passkey="sign-in" data-options="/oauth/authorize/passkey/options" hidden>
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}<input type="hidden" name="credential" value="">
<button class="secondary" type="submit">Sign in with a passkey</button>
<p class="muted" data-passkey-status role="status"></p>
</form>
${scriptTag}`;
}
