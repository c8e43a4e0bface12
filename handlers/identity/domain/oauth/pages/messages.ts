/** Pages that only say something: errors that must not redirect, expired forms, locks. */
import { alert, escapeHtml, layout } from "./layout.ts";

export function messagePage(o: { title: string; heading: string; message: string; link?: { href: string; label: string } }): string {
  const link = o.link ? `<p><a href="${escapeHtml(o.link.href)}">${escapeHtml(o.link.label)}</a></p>` : "";
  return layout({ title: o.title, main: `<h1>${escapeHtml(o.heading)}</h1>\n<p>${escapeHtml(o.message)}</p>\n${link}` });
}

/** X-ID-AZ-1: unknown client or unregistered redirect URI. */
export const invalidRequestPage = (message: string) =>
  messagePage({ title: "Sign-in error", heading: "This sign-in link is not valid", message: `${message} Go back to the application and try again.` });

export const expiredFormPage = () =>
  messagePage({
    title: "Session expired",
    heading: "This form has expired",
    message: "The sign-in request is unknown or over 10 minutes old, or the page was opened in another browser. Go back to the application and start signing in again.",
  });

/** X-ID-AZ-3: what happened and when to retry. */
export function lockedPage(retryAfterSeconds: number, what: "account" | "address" | "signup"): string {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
  const when = `Try again in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  const message =
    what === "signup"
      ? `Too many accounts were created from your network. ${when}.`
      : `Password sign-in for this ${what === "account" ? "account" : "network address"} is paused after too many failed attempts. ${when}, or continue with another sign-in method.`;
  return layout({ title: "Too many attempts", main: `<h1>Too many attempts</h1>\n${alert(message)}` });
}
