/** The signed-in user's Security page (X-ID-MFA-2, X-ID-MFA-3): the authenticator app and the recovery codes. */
import type { FactorStatus } from "../domain/factors/factors-area.ts";
import { alert, escapeHtml, hidden, layout } from "./layout.ts";
import { type EnrolmentView, enrolmentBlock, recoveryCodesList } from "./second-factor.ts";

export interface SecurityView {
  csrfToken: string;
  email: string;
  status: FactorStatus;
  /** Set while an enrolment waits for its first code. */
  enrolment?: EnrolmentView;
  /** Set once, right after they were made. */
  recoveryCodes?: string[];
  error?: string;
  notice?: string;
}

const form = (csrf: string, action: string, inner: string, button: string, secondary = false) =>
  `<form method="post" action="/account/security">${hidden("csrf_token", csrf)}${hidden("action", action)}${inner}<button${secondary ? ' class="secondary"' : ""} type="submit">${escapeHtml(button)}</button></form>`;

/** Removal and regeneration ask for the password or a current code. */
const proofFields = (id: string) => `<label for="${id}-password">Current password</label>
<input id="${id}-password" name="password" type="password" autocomplete="current-password" maxlength="1024">
<label for="${id}-code">or a code from your authenticator app</label>
<input id="${id}-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="32">`;

export function securityPage(v: SecurityView): string {
  const notice = v.notice ? `<p role="status">${escapeHtml(v.notice)}</p>` : "";
  let body: string;
  if (v.recoveryCodes) {
    body = `${recoveryCodesList(v.recoveryCodes)}<p><a class="button" href="/account/security">Done</a></p>`;
  } else if (v.enrolment) {
    body = `<h2>Set up an authenticator app</h2>
${enrolmentBlock(v.enrolment)}
${form(v.csrfToken, "confirm", `<label for="code">Code from the app</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="32">`, "Turn on")}`;
  } else if (v.status.totp === "on") {
    body = `<h2>Authenticator app</h2>
<p>On. Signing in asks for a code from your app.</p>
<p class="muted">${v.status.recoveryCodesLeft} recovery code${v.status.recoveryCodesLeft === 1 ? "" : "s"} left.</p>
<h3>New recovery codes</h3>
${form(v.csrfToken, "regenerate", proofFields("regenerate"), "Make new recovery codes", true)}
<h3>Turn off</h3>
${form(v.csrfToken, "remove", proofFields("remove"), "Remove the authenticator app", true)}`;
  } else {
    body = `<h2>Authenticator app</h2>
<p>Off. Add a second step to signing in: a code from an app on your phone.</p>
${form(v.csrfToken, "start", "", "Set up an authenticator app")}`;
  }
  return layout({
    title: "Security",
    main: `<h1>Security</h1>
<p class="muted">Signed in as ${escapeHtml(v.email)}</p>
<nav class="muted"><a href="/account">Your account</a> · <a href="/logout">Sign out</a></nav>
${alert(v.error)}${notice}
${body}`,
  });
}
