/** The sign-up and sign-out pages. */
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";

export interface SignupView {
  requestId: string;
  csrfToken: string;
  applicationName: string;
  branding: Branding;
  /** Back to the login page of the same request. */
  signInHref: string;
  values?: { email?: string; firstName?: string; lastName?: string };
  errors?: string[];
}

export function signupPage(v: SignupView): string {
  const val = (s: string | undefined) => escapeHtml(s ?? "");
  return layout({
    title: `Create your account for ${v.applicationName}`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Create your account</h1>
<p class="muted">to continue to ${escapeHtml(v.applicationName)}</p>
${(v.errors ?? []).map(alert).join("\n")}
<form method="post" action="/signup">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}
<label for="first_name">First name</label>
<input id="first_name" name="first_name" type="text" autocomplete="given-name" required maxlength="100" value="${val(v.values?.firstName)}">
<label for="last_name">Last name</label>
<input id="last_name" name="last_name" type="text" autocomplete="family-name" required maxlength="100" value="${val(v.values?.lastName)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${val(v.values?.email)}">
<label for="password">Password (at least 8 characters)</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="1024" required>
<button type="submit">Create account</button>
</form>
<p class="muted"><a href="${escapeHtml(v.signInHref)}">I already have an account</a></p>`,
  });
}

export function logoutPage(v: { csrfToken: string; email?: string }): string {
  if (!v.email) return layout({ title: "Signed out", main: "<h1>You are signed out</h1>" });
  return layout({
    title: "Sign out",
    main: `<h1>Signed in as ${escapeHtml(v.email)}</h1>
<form method="post" action="/logout">${hidden("csrf_token", v.csrfToken)}<button type="submit">Sign out</button></form>`,
  });
}
