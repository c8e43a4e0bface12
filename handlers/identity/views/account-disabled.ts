/** The page of a user an admin disabled for the application's organization (X-ID-UADM-3), branded as the application. */
import { type Branding, escapeHtml, layout } from "./layout.ts";

export function accountDisabledPage(v: { applicationName: string; branding: Branding }): string {
  return layout({
    title: "Account disabled",
    branding: v.branding,
    applicationName: v.applicationName,
    main: `<h1>Your account is disabled</h1>
<p>An administrator has disabled your account for ${escapeHtml(v.applicationName)}. Contact them to have it enabled again.</p>`,
  });
}
