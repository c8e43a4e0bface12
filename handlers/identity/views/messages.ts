/** Pages that only say something: errors that must not redirect, expired forms, locks. */
import { alert, escapeHtml, layout } from "./layout.ts";

export function messagePage(o: { title: string; heading: string; message: string; link?: { href: string; label: string } }): string {
  const link = o.link ? `<p><a href="${escapeHtml(o.link.href)}">${escapeHtml(o.link.label)}</a></p>` : "";
  return layout({ title: o.title, main: `<h1>${escapeHtml(o.heading)}</h1>\n<p>${escapeHtml(o.message)}</p>\n${link}` });
}

/** X-ID-AZ-1: unknown client or unregistered redirect URI. */
export const invalidRequestPage = (message: string) =>
  messagePage({
    title: "Sign-in error",
    heading: "This sign-in link is not valid",
    message: `${message} Go back to the application and try again.`,
  });

/** A sign-in request that is unknown or expired, or no longer waiting in this browser. */
export const signInExpiredPage = () =>
  messagePage({
    title: "Sign-in expired",
    heading: "This sign-in request has expired",
    message: "Go back to the application and start signing in again.",
  });

/** A page that needs a signed-in user, opened without one: what signing in is for, and where it leads back to. */
export const signInFirstPage = (purpose: string, returnPath: string) =>
  messagePage({
    title: "Sign in first",
    heading: "You are not signed in",
    message: `Sign in to ${purpose}.`,
    link: { href: returnPath, label: "Sign in" },
  });

export const expiredFormPage = () =>
  messagePage({
    title: "Session expired",
    heading: "This form has expired",
    message:
      "The sign-in request is unknown or over 10 minutes old, or the page was opened in another browser. Go back to the application and start signing in again.",
  });

/** X-ID-AZ-3, X-ID-AZ-4 (and sign-up's limit, X-ID-USR-1): what is limited, and when to retry. */
export function lockedPage(retryAfterSeconds: number, what: "account-address" | "address" | "account" | "signup"): string {
  const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60));
  const when =
    retryAfterSeconds < 60
      ? `Try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? "" : "s"}`
      : `Try again in ${minutes} minute${minutes === 1 ? "" : "s"}`;
  const message = {
    signup: `Too many accounts were created from your network. ${when}.`,
    "account-address": `Password sign-in to this account from your network address is paused after too many failed attempts. ${when}, or continue with another sign-in method.`,
    address: `Password sign-in from your network address is paused after too many failed attempts. ${when}, or continue with another sign-in method.`,
    account: `This account has had many failed sign-in attempts, so signing in to it is slowed down for its protection. ${when}.`,
  }[what];
  return layout({ title: "Too many attempts", main: `<h1>Too many attempts</h1>\n${alert(message)}` });
}
