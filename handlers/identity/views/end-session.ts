/** RP-Initiated Logout's pages (X-ID-LOGOUT-4): the confirmation, branded for the application that asked, and the signed-out page. */
import { escapeHtml, hidden, layout, type Branding } from "./layout.ts";

export interface EndSessionConfirmView {
  csrfToken: string;
  email: string;
  application?: { name: string; branding: Branding } | undefined;
  /** The logout request's parameters, posted again with the confirmation. */
  carried: Record<string, string>;
}

export function endSessionConfirmPage(v: EndSessionConfirmView): string {
  const from = v.application ? `<p class="muted">${escapeHtml(v.application.name)} asks to sign you out.</p>` : "";
  const fields = Object.entries(v.carried)
    .map(([name, value]) => hidden(name, value))
    .join("");
  return layout({
    title: "Sign out",
    ...(v.application ? { applicationName: v.application.name, branding: v.application.branding } : {}),
    main: `<h1>Sign out of ${escapeHtml(v.email)}?</h1>
${from}
<form method="post" action="/oauth/logout">${hidden("csrf_token", v.csrfToken)}${hidden("confirm", "yes")}${fields}<button type="submit">Sign out</button></form>`,
  });
}

export function endSessionDonePage(application?: { name: string; branding: Branding }): string {
  return layout({
    title: "Signed out",
    ...(application ? { applicationName: application.name, branding: application.branding } : {}),
    main: "<h1>You are signed out</h1>",
  });
}

export const endSessionInvalidPage = (message: string) =>
  layout({ title: "Sign-out error", main: `<h1>This sign-out link is not valid</h1>\n<p>${escapeHtml(message)}</p>` });
