/**
 * The identity dashboard (X-ID-ADM-1), bundled by esbuild into the one script /dashboard/app.js
 * (handlers/identity/views/dashboard.ts). Start: finish a sign-in whose answer is in the URL,
 * or start one; then learn the admin's organization and the deployment's providers, and route.
 */
import { ApiError, client, ok } from "./api.ts";
import { h, nav, show, status } from "./dom.ts";
import { route } from "./router.ts";
import { completeSignIn, signInAgain, signOut, startSignIn } from "./sign-in.ts";
import { currentToken } from "./session.ts";
import { state } from "./state.ts";

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  if (params.has("code") || params.has("error")) {
    const failure = await completeSignIn(params);
    // The code, state and iss must not stay in the address bar or the history.
    history.replaceState(null, "", `/dashboard${location.hash}`);
    if (failure) return signInAgain(failure);
  }
  if (!currentToken()) return startSignIn();
  try {
    state.organization = ok(await client.GET("/api/organizations/current"));
    state.providers = ok(await client.GET("/api/providers")).items;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) return;
    state.organization = undefined; // a user without an organization: only their account
  }
  nav.replaceChildren(
    ...(state.organization ? [h("a", { href: "#users" }, "Users"), " "] : []),
    h("a", { href: "#account" }, "Your account"),
    " ",
    h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out"),
  );
  addEventListener("hashchange", () => void route());
  await route();
}

main().catch((err: Error) => show(status(`The dashboard failed to start: ${err.message}`, "error")));
