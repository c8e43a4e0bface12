/** The login and consent pages of a pending authorization request (ID-AZ-7, X-ID-AZ-2). */
import { describeScope } from "../domain/oauth/scopes.ts";
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";
import { passkeySignInBlock } from "./passkeys.ts";

export interface RequestView {
  requestId: string;
  csrfToken: string;
  applicationName: string;
  branding: Branding;
  scopes: string[];
  /** The API the tokens are for (X-ID-RES-1): its API scopes are described by it. */
  resource?: string;
  /** Social providers enabled for the application and configured on this deployment. */
  providers: Array<{ id: string; name: string }>;
}

const scopeList = (v: RequestView) =>
  v.scopes.length
    ? `<p>${escapeHtml(v.applicationName)} will be able to:</p><ul class="scopes">${v.scopes
        .map((s) => `<li>${escapeHtml(describeScope(s, v.applicationName, v.resource))}</li>`)
        .join("")}</ul>`
    : "";

const denyForm = (v: RequestView, label: string) =>
  `<form method="post" action="/oauth/authorize">${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}<button class="secondary" type="submit" name="action" value="deny">${label}</button></form>`;

export function loginPage(v: RequestView & { email?: string; error?: string }): string {
  const social = v.providers
    .map(
      (p) =>
        `<a class="button secondary social" href="/oauth/social/${encodeURIComponent(p.id)}/start?request_id=${encodeURIComponent(v.requestId)}">Continue with ${escapeHtml(p.name)}</a>`,
    )
    .join("\n");
  return layout({
    title: `Sign in to ${v.applicationName}`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Sign in to ${escapeHtml(v.applicationName)}</h1>
${alert(v.error)}
${scopeList(v)}
<form method="post" action="/oauth/authorize">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}${hidden("action", "login")}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${escapeHtml(v.email ?? "")}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
<button type="submit">Sign in</button>
</form>
${forgotPasswordLink(v)}
${passkeySignInBlock(v)}
${social}
<p class="muted">No account yet? <a href="/signup?request_id=${encodeURIComponent(v.requestId)}">Create an account</a></p>
${denyForm(v, "Cancel")}`,
  });
}

/** X-ID-RST-1: the way back for a forgotten password, within the same authorization request. */
const forgotPasswordLink = (v: RequestView) =>
  `<p class="muted"><a href="/forgot-password?request_id=${encodeURIComponent(v.requestId)}">Forgot password?</a></p>`;

export function consentPage(v: RequestView & { userEmail: string; userName: string }): string {
  return layout({
    title: `Allow ${v.applicationName}?`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Continue to ${escapeHtml(v.applicationName)}</h1>
<p>Signed in as <strong>${escapeHtml(v.userName)}</strong> (${escapeHtml(v.userEmail)}).</p>
${scopeList(v)}
<form method="post" action="/oauth/authorize">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}${hidden("action", "consent")}
<button type="submit">Allow</button>
</form>
${denyForm(v, "Deny")}
<form method="post" action="/logout">${hidden("csrf_token", v.csrfToken)}${hidden("return_to", `/signup?request_id=${v.requestId}`)}<button class="secondary" type="submit">Not you? Sign out</button></form>`,
  });
}
