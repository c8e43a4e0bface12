/** The account-linking page of a social sign-in (X-ID-SOC-1): prove the existing account with its password. */
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";

export interface LinkView {
  csrfToken: string;
  applicationName: string;
  branding: Branding;
  providerName: string;
  /** The existing account's email (the upstream gave the same address). */
  email: string;
  /** Back to the login page of the same request. */
  signInHref: string;
  error?: string;
}

export function linkPage(v: LinkView): string {
  return layout({
    title: `Link your ${v.providerName} account`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>You already have an account</h1>
${alert(v.error)}
<p>An account with the email address <strong>${escapeHtml(v.email)}</strong> already exists. To sign in to it with ${escapeHtml(v.providerName)} from now on, enter its password.</p>
<form method="post" action="/oauth/social/link">
${hidden("csrf_token", v.csrfToken)}
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
<button type="submit">Link and continue to ${escapeHtml(v.applicationName)}</button>
</form>
<p class="muted">Not your account? <a href="${escapeHtml(v.signInHref)}">Back to the sign-in page</a></p>`,
  });
}
