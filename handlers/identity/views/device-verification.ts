/** The device verification pages (X-ID-DEV-3): the code form, the consent screen, the outcome. */
import { alert, escapeHtml, hidden, layout, type Branding } from "./layout.ts";

/** The application whose device asks, once the code names it: its name and branding frame the page. */
export interface DeviceFrame {
  applicationName?: string;
  branding?: Branding;
}

const framed = (f: DeviceFrame, title: string, main: string) =>
  layout({
    title,
    ...(f.applicationName ? { applicationName: f.applicationName } : {}),
    ...(f.branding ? { branding: f.branding } : {}),
    main,
  });

export function deviceCodePage(v: { csrfToken: string; userCode?: string; error?: string }): string {
  return framed(
    {},
    "Connect a device",
    `<h1>Connect a device</h1>
${alert(v.error)}
<p>Enter the code your device shows.</p>
<form method="post" action="/device">
${hidden("csrf_token", v.csrfToken)}
<label for="user_code">Code</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" required maxlength="64" placeholder="XXXX-XXXX" value="${escapeHtml(v.userCode ?? "")}">
<button type="submit" name="action" value="lookup">Continue</button>
</form>`,
  );
}

export function deviceConsentPage(
  v: DeviceFrame & { csrfToken: string; userCode: string; applicationName: string; scopes: string[] },
): string {
  const items = v.scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join("");
  return framed(
    v,
    `Connect ${v.applicationName}`,
    `<h1>Allow ${escapeHtml(v.applicationName)} on your device?</h1>
<p>Only continue if the code <strong>${escapeHtml(v.userCode)}</strong> is the one your device shows.</p>
<p>${escapeHtml(v.applicationName)} asks to:</p>
<ul>${items}</ul>
<form method="post" action="/device">
${hidden("csrf_token", v.csrfToken)}${hidden("user_code", v.userCode)}
<button type="submit" name="action" value="approve">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>`,
  );
}

export function deviceDonePage(v: DeviceFrame & { approved: boolean }): string {
  return framed(
    v,
    v.approved ? "Device connected" : "Device not connected",
    v.approved
      ? "<h1>Device connected</h1><p>You can go back to your device.</p>"
      : "<h1>Request denied</h1><p>The device was not given access. You can close this page.</p>",
  );
}
