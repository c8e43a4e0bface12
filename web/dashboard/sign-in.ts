/**
 * The dashboard's own sign-in: it is the first-party public client `identity-dashboard`, and signs
 * the admin in through this server with Authorization Code + PKCE (RFC 7636, S256), checking the
 * state and the issuer (RFC 9207) of the answer.
 */
import type { components } from "../../generated/sdk/types/identity.ts";
import { CLIENT_ID, issuer, REDIRECT_URI, SCOPE } from "./config.ts";
import { h, nav, show, status } from "./dom.ts";
import { clearToken, savePending, storeToken, takePending } from "./session.ts";

type TokenResponse = components["schemas"]["AccessTokenResponse"];

const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
const randomString = (bytes: number) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

/** Sends the admin to this server's authorization endpoint, remembering the verifier and state in this tab. */
export async function startSignIn(): Promise<void> {
  if (!crypto.subtle) {
    show(status("Signing in needs a secure context: open the dashboard over https (or on localhost).", "error"));
    return;
  }
  const verifier = randomString(32); // 43 characters, within 43-128
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = randomString(16);
  savePending({ verifier, state, back: location.hash });
  const url = new URL("/oauth/authorize", issuer);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.toString());
}

/** Handles the authorization response in the URL; returns an error message, or "" on success. */
export async function completeSignIn(params: URLSearchParams): Promise<string> {
  const pending = takePending();
  if (!pending || params.get("state") !== pending.state)
    return "The sign-in response does not belong to this tab (state mismatch). Please sign in again.";
  if (params.has("iss") && params.get("iss") !== issuer) return "The sign-in response came from another issuer. Please sign in again.";
  const error = params.get("error");
  if (error) {
    if (error === "access_denied") return "Sign-in was cancelled.";
    return `Sign-in failed: ${params.get("error_description") || error}`;
  }
  // The token endpoint is form-encoded OAuth, outside the admin API's JSON client.
  const res = await fetch("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: params.get("code") ?? "",
      redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID,
      code_verifier: pending.verifier,
    }),
  });
  const body = (await res.json().catch(() => ({}))) as Partial<TokenResponse> & { error?: string; error_description?: string };
  if (!res.ok || !body.access_token) return `Sign-in failed: ${body.error_description || body.error || res.status}`;
  storeToken(body.access_token, Number(body.expires_in) || 3600);
  if (pending.back) location.hash = pending.back;
  return "";
}

export function signOut(): void {
  clearToken();
  location.assign("/logout");
}

/** Forgets the token and offers to sign in again, saying why. */
export function signInAgain(message: string): void {
  clearToken();
  nav.replaceChildren();
  show(status(message, "error"), h("p", {}, h("button", { type: "button", onclick: () => startSignIn() }, "Sign in")));
}
