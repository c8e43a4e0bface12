/** The password reset pages (X-ID-RST-1..5): ask for a link, check your email, choose a new password, done. */
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";

/** The application the user came from, when there is one: its name and branding frame the page. */
export interface ResetFrame {
  applicationName?: string;
  branding?: Branding;
}

const framed = (f: ResetFrame, title: string, main: string) =>
  layout({
    title: f.applicationName ? `${title} for ${f.applicationName}` : title,
    ...(f.applicationName ? { applicationName: f.applicationName } : {}),
    ...(f.branding ? { branding: f.branding } : {}),
    main,
  });

const backLink = (href: string | undefined, label: string) =>
  href ? `<p class="muted"><a href="${escapeHtml(href)}">${escapeHtml(label)}</a></p>` : "";

export function forgotPasswordPage(
  v: ResetFrame & { csrfToken: string; requestId?: string; signInHref?: string; email?: string; error?: string },
): string {
  return framed(
    v,
    "Reset your password",
    `<h1>Forgot your password?</h1>
${alert(v.error)}
<p>Enter the email address of your account. If it has a password, we send it a link to choose a new one.</p>
<form method="post" action="/forgot-password">
${hidden("csrf_token", v.csrfToken)}${v.requestId ? hidden("request_id", v.requestId) : ""}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${escapeHtml(v.email ?? "")}">
<button type="submit">Send the link</button>
</form>
${backLink(v.signInHref, "Back to sign in")}`,
  );
}

export function resetLinkSentPage(v: ResetFrame & { minutes: number; signInHref?: string }): string {
  return framed(
    v,
    "Check your email",
    `<h1>Check your email</h1>
<p>If an account has this address, a message is on its way with a link to choose a new password. The link works once, for ${v.minutes} minutes.</p>
${backLink(v.signInHref, "Back to sign in")}`,
  );
}

export function resetPasswordPage(v: ResetFrame & { csrfToken: string; token: string; email: string; errors?: string[] }): string {
  return framed(
    v,
    "Choose a new password",
    `<h1>Choose a new password</h1>
<p class="muted">for ${escapeHtml(v.email)}</p>
${(v.errors ?? []).map(alert).join("\n")}
<form method="post" action="/reset-password">
${hidden("csrf_token", v.csrfToken)}${hidden("token", v.token)}
<input type="email" autocomplete="username" aria-hidden="true" value="${escapeHtml(v.email)}" hidden readonly>
<label for="password">New password (at least 8 characters)</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="1024" required>
<button type="submit">Change password</button>
</form>
<p class="muted">Every browser signed in to your account is signed out when you change it.</p>`,
  );
}

export function resetLinkInvalidPage(minutes: number): string {
  return layout({
    title: "Link expired",
    main: `<h1>This link has expired or was used</h1>
<p>A password reset link works once, for ${minutes} minutes, and only the newest one asked for works. Ask for a new link.</p>
<p><a href="/forgot-password">Ask for a new link</a></p>`,
  });
}

export function resetDonePage(v: ResetFrame & { signInHref?: string }): string {
  const signIn = v.signInHref
    ? `<p><a class="button" href="${escapeHtml(v.signInHref)}">Sign in${v.applicationName ? ` to ${escapeHtml(v.applicationName)}` : ""}</a></p>`
    : "<p>Go back to the application and sign in.</p>";
  return framed(
    v,
    "Password changed",
    `<h1>Your password was changed</h1>
<p>You were signed out everywhere. Sign in with your new password.</p>
${signIn}`,
  );
}
