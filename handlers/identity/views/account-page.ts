/** The account page (X-ID-ACCT-1..6): the identity service's own branding, no script, one form per action. */
import type { AccountOverview } from "../domain/oauth/own-account.ts";
import { deviceSummary } from "./device.ts";
import { alert, escapeHtml, hidden, layout } from "./layout.ts";

export type AccountNotice = "application-revoked" | "session-ended" | "password-changed" | "signed-out" | "account-deleted";

/** What each notice says: fixed text, so nothing a link carries is ever shown. */
export const NOTICES: Record<AccountNotice, string> = {
  "application-revoked": "The application's access was removed. It will ask again if you use it.",
  "session-ended": "The session was signed out.",
  "password-changed": "Your password was changed. Your other sessions were signed out, and applications must sign you in again.",
  "signed-out": "You signed out of this browser.",
  "account-deleted": "Your account was deleted.",
};

export interface AccountPageView {
  overview: AccountOverview;
  csrfToken: string;
  notice?: AccountNotice;
  /** Messages about a form that was refused (re-rendered with 400). */
  errors?: string[];
}

/** Dates as people read them, in UTC (the page has no script to know the browser's zone). */
const when = (iso: string | undefined) => {
  if (!iso) return "never";
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? "unknown"
    : `${date.toLocaleString("en-GB", { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", timeZone: "UTC" })} UTC`;
};

const status = (message: string | undefined) => (message ? `<p role="status">${escapeHtml(message)}</p>` : "");

function applicationsSection(v: AccountPageView): string {
  const apps = v.overview.applications;
  if (!apps.length) return `<h2>Applications</h2>\n<p class="muted">No application has access to your account.</p>`;
  const items = apps.map(
    (a) => `<li><strong>${escapeHtml(a.name)}</strong>
<p class="muted">Can see: ${escapeHtml(a.scopes.join(", ") || "nothing beyond signing you in")}. Granted ${escapeHtml(when(a.grantedAt))}.</p>
<form method="post" action="/account/applications/revoke">${hidden("csrf_token", v.csrfToken)}${hidden("application_id", a.applicationId)}<button type="submit" class="secondary">Remove access</button></form></li>`,
  );
  return `<h2>Applications</h2>\n<ul class="account">\n${items.join("\n")}\n</ul>`;
}

function sessionsSection(v: AccountPageView): string {
  const items = v.overview.sessions.map(
    (s) => `<li><strong>${escapeHtml(deviceSummary(s.userAgent))}</strong>${s.current ? " (this browser)" : ""}
<p class="muted">Address ${escapeHtml(s.ipAddress ?? "unknown")}. Signed in ${escapeHtml(when(s.signedInAt))}. Last used ${escapeHtml(when(s.lastUsedAt))}.</p>
<form method="post" action="/account/sessions/end">${hidden("csrf_token", v.csrfToken)}${hidden("session", s.handle)}<button type="submit" class="secondary">Sign out</button></form></li>`,
  );
  return `<h2>Sessions</h2>\n<ul class="account">\n${items.join("\n")}\n</ul>`;
}

function passwordSection(v: AccountPageView): string {
  if (!v.overview.user.password_hash)
    return `<h2>Password</h2>\n<p class="muted">Your account signs in through another provider and has no password.</p>`;
  return `<h2>Password</h2>
<form method="post" action="/account/password">
${hidden("csrf_token", v.csrfToken)}
<label for="current_password">Current password</label>
<input id="current_password" name="current_password" type="password" autocomplete="current-password" required maxlength="1024">
<label for="new_password">New password (at least 8 characters)</label>
<input id="new_password" name="new_password" type="password" autocomplete="new-password" required minlength="8" maxlength="1024">
<button type="submit">Change password</button>
</form>`;
}

function deleteSection(v: AccountPageView): string {
  const confirm = v.overview.user.password_hash
    ? `<label for="delete_password">Your password</label>
<input id="delete_password" name="password" type="password" autocomplete="current-password" required maxlength="1024">`
    : `<label for="delete_email">Type your email address to confirm</label>
<input id="delete_email" name="email" type="text" autocomplete="off" required maxlength="254">`;
  return `<h2>Delete account</h2>
<p class="muted">This deletes your account, signs you out everywhere and ends every application's access. It cannot be undone.</p>
<form method="post" action="/account/delete">
${hidden("csrf_token", v.csrfToken)}
${confirm}
<button type="submit" class="secondary">Delete my account</button>
</form>`;
}

export function accountPage(v: AccountPageView): string {
  const user = v.overview.user;
  return layout({
    title: "Your account",
    main: `<h1>Your account</h1>
<p>${escapeHtml(`${user.first_name} ${user.last_name}`.trim())} (${escapeHtml(user.email)})</p>
<nav class="muted"><a href="/account/security">Security</a> · <a href="/account/passkeys">Passkeys</a> · <a href="/logout">Sign out</a></nav>
${status(v.notice ? NOTICES[v.notice] : undefined)}
${(v.errors ?? []).map(alert).join("\n")}
${applicationsSection(v)}
${sessionsSection(v)}
${passwordSection(v)}
${deleteSection(v)}`,
  });
}

/** The page for a browser without a session that came back from a sign-in it cancelled, or after signing out or deleting the account. */
export function accountSignedOutPage(notice: AccountNotice | undefined): string {
  return layout({
    title: "Your account",
    main: `<h1>You are not signed in</h1>
${status(notice ? NOTICES[notice] : undefined)}
<p><a class="button" href="/account">Sign in</a></p>`,
  });
}
