/**
 * One user of the organization (X-ID-UADM-2): profile, last sign-in, its applications they use;
 * disable or enable them for the organization, delete them, remove their second factor
 * (X-ID-UADM-7), force a password reset (X-ID-UADM-8) or mail a new verification link
 * (X-ID-UADM-9), each after a confirmation.
 */
import { ApiError, client, ok, type Schemas } from "../api.ts";
import { h, show, status } from "../dom.ts";

export async function userView(id: string): Promise<void> {
  const path = { params: { path: { userId: id } } };
  const u = ok(await client.GET("/api/organizations/current/users/{userId}", path));
  const notice = h("div", { "aria-live": "polite" });

  /** Runs an action after the admin confirmed it; a refusal (409 own_account, account_shared, 429) is shown, not thrown. */
  const act = async (question: string, run: () => Promise<unknown>, then: () => void) => {
    if (!confirm(question)) return;
    try {
      await run();
      then();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401) throw err;
      notice.replaceChildren(status(err.message, "error"));
    }
  };
  const toggle = () =>
    u.enabled
      ? act(
          `Disable ${u.email}? They can no longer sign in to this organization's applications, and their tokens there end now.`,
          async () => ok(await client.POST("/api/organizations/current/users/{userId}/disable", path)),
          () => void userView(id),
        )
      : act(
          `Enable ${u.email} again? They can sign in to this organization's applications again.`,
          async () => ok(await client.POST("/api/organizations/current/users/{userId}/enable", path)),
          () => void userView(id),
        );
  const remove = () =>
    act(
      `Delete ${u.email} from this organization? Their access to its applications ends now. This cannot be undone.`,
      async () => ok(await client.DELETE("/api/organizations/current/users/{userId}", path)),
      () => {
        location.hash = "#users";
      },
    );
  const removeSecondFactor = () =>
    act(
      `Remove the two-step verification of ${u.email}? Their authenticator app and recovery codes stop working; they sign in with their password and can set it up again.`,
      async () => ok(await client.DELETE("/api/organizations/current/users/{userId}/second-factor", path)),
      () => notice.replaceChildren(status("Two-step verification removed.", "success")),
    );
  const forceReset = () =>
    act(
      `Force a password reset for ${u.email}? Their password stops working, every session and token of theirs ends, and they are emailed a link to choose a new one.`,
      async () => ok(await client.POST("/api/organizations/current/users/{userId}/password-reset", path)),
      () => notice.replaceChildren(status("Password reset: a link to choose a new password was emailed.", "success")),
    );
  const resendVerification = () =>
    act(
      `Email ${u.email} a new link to verify their address?`,
      async () => ok(await client.POST("/api/organizations/current/users/{userId}/verification-email", path)),
      () => notice.replaceChildren(status("Verification email sent.", "success")),
    );

  show(
    h("p", {}, h("a", { href: "#users" }, "← All users")),
    h(
      "section",
      { "aria-labelledby": "user-title" },
      h("h2", { id: "user-title" }, `${u.firstName} ${u.lastName}`.trim() || u.email),
      h("p", {}, u.email, u.emailVerified ? " (verified)" : ""),
      h(
        "p",
        { class: "muted" },
        `Account created ${new Date(u.createdAt).toLocaleString()} · last sign-in ${u.lastSignInAt ? new Date(u.lastSignInAt).toLocaleString() : "never"}`,
      ),
      h("p", {}, u.enabled ? "Enabled" : "Disabled for this organization", u.admin ? " · administers this organization" : ""),
      applications(u),
    ),
    h(
      "section",
      { "aria-labelledby": "user-actions-title" },
      h("h2", { id: "user-actions-title" }, "Access"),
      notice,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: toggle }, u.enabled ? "Disable user" : "Enable user"),
        h("button", { type: "button", class: "secondary", onclick: removeSecondFactor }, "Remove second factor"),
        h("button", { type: "button", class: "secondary", onclick: forceReset }, "Force password reset"),
        h("button", { type: "button", class: "secondary", onclick: resendVerification }, "Resend verification email"),
        h("button", { type: "button", class: "danger", onclick: remove }, "Delete user"),
      ),
    ),
  );
}

const applications = (u: Schemas["OrganizationUser"]) =>
  u.applications.length
    ? h(
        "ul",
        {},
        u.applications.map((a) => h("li", {}, h("a", { href: `#app/${a.id}` }, a.name))),
      )
    : h("p", { class: "muted" }, "Uses none of this organization's applications.");
