/**
 * The pages of the second factor (X-ID-MFA-*): the sign-in's second step (a code or a recovery
 * code), enrolment of an authenticator app (QR code and the secret as text), and the recovery
 * codes, shown once. Branded per application when there is one.
 */
import { alert, type Branding, escapeHtml, hidden, layout } from "./layout.ts";
import { PASSKEYS_SCRIPT_PATH } from "./passkeys.ts";

/** What an enrolment shows: the `otpauth://` URI as an inline SVG QR code, and its secret for typing in. */
export interface EnrolmentView {
  qrSvg: string;
  secret: string;
}

/** The secret in groups of four, as authenticator apps show it. */
const grouped = (secret: string) => secret.replace(/(.{4})/g, "$1 ").trim();

export function enrolmentBlock(e: EnrolmentView): string {
  return `<p>Scan this QR code with an authenticator app (such as Google Authenticator, 1Password or Aegis), then enter the 6-digit code it shows.</p>
<figure class="qr" aria-label="QR code of the authenticator key">${e.qrSvg}</figure>
<p class="muted">Cannot scan it? Enter this key in the app: <code id="totp-secret">${escapeHtml(grouped(e.secret))}</code></p>`;
}

const codeInput = (label: string, autocomplete = "one-time-code") =>
  `<label for="code">${escapeHtml(label)}</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="${autocomplete}" required maxlength="32" autofocus>`;

export interface SecondStepView {
  requestId: string;
  csrfToken: string;
  applicationName: string;
  branding: Branding;
  error?: string;
}

/** Which proofs the second step offers (X-ID-PK-9): the code form (an app's code or a recovery code), a passkey. */
export interface SecondStepMethods {
  code: boolean;
  passkey: boolean;
}

/**
 * X-ID-PK-9: "Use a passkey", hidden until the page's one script finds WebAuthn (X-ID-PK-7); it posts
 * the assertion to the step's own form. Without a code form, a note says why nothing else is offered.
 */
function passkeyStepBlock(v: SecondStepView, withCodes: boolean): string {
  const unavailable = withCodes
    ? ""
    : `\n<p id="passkey-unavailable" class="muted">This browser cannot use a passkey. Continue on a device that has your passkey.</p>`;
  return `<form method="post" action="/signin/second-factor" data-passkey="second-factor" data-options="/signin/second-factor/passkey/options"${withCodes ? "" : ' data-unavailable="passkey-unavailable"'} hidden>
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}<input type="hidden" name="credential" value="">
<button type="submit">Use a passkey</button>
<p class="muted" data-passkey-status role="status"></p>
</form>${unavailable}
<script type="module" src="${PASSKEYS_SCRIPT_PATH}"></script>`;
}

/** The second step of a sign-in: a code of the authenticator app, or a recovery code; or a passkey (X-ID-PK-9). */
export function secondFactorPage(v: SecondStepView, methods: SecondStepMethods = { code: true, passkey: false }): string {
  const codeForm = `<p>Enter the 6-digit code from your authenticator app to continue to ${escapeHtml(v.applicationName)}.</p>
<form method="post" action="/signin/second-factor">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}
${codeInput("Code")}
<button type="submit">Verify</button>
</form>
<p class="muted">Lost your phone? Enter one of your recovery codes instead.</p>`;
  const passkeyIntro = `<p>Use your passkey to continue to ${escapeHtml(v.applicationName)}.</p>`;
  return layout({
    title: `Two-step verification for ${v.applicationName}`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Two-step verification</h1>
${alert(v.error)}
${methods.passkey ? `${passkeyIntro}\n${passkeyStepBlock(v, methods.code)}\n` : ""}${methods.code ? codeForm : ""}`,
  });
}

/** The second step when the application requires a second factor and the user has none yet (X-ID-MFA-7). */
export function enrolStepPage(v: SecondStepView & EnrolmentView): string {
  return layout({
    title: `Set up two-step verification for ${v.applicationName}`,
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Set up two-step verification</h1>
${alert(v.error)}
<p>${escapeHtml(v.applicationName)} requires a second step when you sign in.</p>
${enrolmentBlock(v)}
<form method="post" action="/signin/second-factor">
${hidden("csrf_token", v.csrfToken)}${hidden("request_id", v.requestId)}
${codeInput("Code from the app")}
<button type="submit">Turn on and continue</button>
</form>`,
  });
}

/** X-ID-MFA-8: too many wrong codes (or passwords on the Security page); when to retry. */
export function tooManyCodesPage(retryAfterSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
  const when =
    retryAfterSeconds < 60
      ? `${retryAfterSeconds} second${retryAfterSeconds === 1 ? "" : "s"}`
      : `${minutes} minute${minutes === 1 ? "" : "s"}`;
  return layout({
    title: "Too many attempts",
    main: `<h1>Too many attempts</h1>\n${alert(`Too many wrong codes. Try again in ${when}.`)}`,
  });
}

export function recoveryCodesList(codes: string[]): string {
  return `<p><strong>Save these recovery codes</strong> somewhere safe. Each one signs you in once if you lose your authenticator app. They are shown only now.</p>
<ul class="recovery-codes">${codes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join("")}</ul>`;
}

/** After enrolment in a sign-in: the recovery codes, then on to the application. */
export function recoveryCodesStepPage(v: { applicationName: string; branding: Branding; codes: string[]; continueHref: string }): string {
  return layout({
    title: "Your recovery codes",
    applicationName: v.applicationName,
    branding: v.branding,
    main: `<h1>Two-step verification is on</h1>
${recoveryCodesList(v.codes)}
<a class="button" href="${escapeHtml(v.continueHref)}">Continue to ${escapeHtml(v.applicationName)}</a>`,
  });
}
