/**
 * What the pages with a passkey form share (the login page and the passkeys page, X-ID-PK-7): their
 * CSP allows exactly one script, this origin's /assets/passkeys.js (a source with a path matches
 * only that path), and `fetch` to this origin for the options; nothing inline, nothing else.
 */
import type { Reply } from "./hosted-pages.ts";
import { PASSKEYS_SCRIPT_PATH } from "../views/passkeys.ts";

export function withPasskeyScript(reply: Reply, issuer: string): Reply {
  const csp = reply.headers["Content-Security-Policy"];
  if (typeof csp !== "string") return reply;
  const script = new URL(PASSKEYS_SCRIPT_PATH, issuer).href;
  reply.headers["Content-Security-Policy"] = `${csp}; script-src ${script}; connect-src 'self'`;
  return reply;
}
