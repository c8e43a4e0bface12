/** The pages of email verification (X-ID-EVF-5, X-ID-EVF-2): the stop in sign-in, and the mailed link's answers. */
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";

export interface VerifyEmailView {
  requestId: string;
  csrfToken: string;
  applicationName: string;
  branding: Branding;
  /** The address the link goes to (the pending new one, else the account's). */
  email: string;
  /** The authorization again: continues once the address is verified. */
  continueHref: string;
  /** A new mail was just sent. */
  sent: boolean;
}

/** X-ID-EVF-5: the application needs a verified address; the mail again, or continue once verified. */
export function verifyEmailPage(v: VerifyEmailView): string {
  return layout({
    title: "Verify your email address",
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Verify your email address</h1>
<p>${escapeHtml(v.applicationName)} needs a verified email address. We sent a link to <strong>${escapeHtml(v.email)}</strong>: open it, then continue here.</p>
${v.sent ? alert(`We sent a new email to ${v.email}.`) : ""}
<form method="post" action="/verify-email">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}
<button type="submit">Send the email again</button>
</form>
<p><a href="${escapeHtml(v.continueHref)}">I have verified it: continue</a></p>`,
  });
}

/** The mailed link worked: the address and where to continue. */
export function emailVerifiedPage(v: { email: string; continueTo?: { href: string; applicationName: string } }): string {
  const next = v.continueTo
    ? `<p><a href="${escapeHtml(v.continueTo.href)}">Continue to ${escapeHtml(v.continueTo.applicationName)}</a></p>`
    : "<p>You can close this page.</p>";
  return layout({
    title: "Email address verified",
    main: `<h1>Your email address is verified</h1>\n<p>${escapeHtml(v.email)} is verified.</p>\n${next}`,
  });
}

/** The mailed link did not work (unknown, used, superseded, expired) or its address was taken meanwhile. */
export function verificationFailedPage(heading: string, message: string): string {
  return layout({ title: "Email verification", main: `<h1>${escapeHtml(heading)}</h1>\n<p>${escapeHtml(message)}</p>` });
}

/** X-ID-EVF-6: mails to this address are paused for a while. */
export function verificationMailPausedPage(retryAfterSeconds: number): string {
  return layout({
    title: "Email sent recently",
    main: `<h1>We sent an email recently</h1>\n${alert(`Try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? "" : "s"}.`)}`,
  });
}
