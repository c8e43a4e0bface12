/** Handlers of /api/users: registration and the signed-in user's own account (X-ID-USR-1). */
import { bearerChallenge, insufficientScope } from "../../server/http/problem.ts";
import { userOf, type IdentityHandlers } from "./identity-handlers.ts";
import { DASHBOARD_CLIENT_ID, REALM, type UserPrincipal } from "./domain/access-tokens.ts";
import { toUser } from "./shared/mappers.ts";
import { requestOrigin } from "./shared/request-origin.ts";

/** Account changes are for the user's own first-party dashboard only: third-party applications cannot change accounts. */
function requireDashboard(user: UserPrincipal, action: string): void {
  if (user.clientId !== DASHBOARD_CLIENT_ID) throw insufficientScope(REALM, `Only the identity dashboard can ${action} an account.`);
}

/** The user resource with the address an email change waits to verify, when there is one (X-ID-EVF-3). */
const withPendingEmail = <U extends object>(user: U, pendingEmail: string | undefined) => (pendingEmail ? { ...user, pendingEmail } : user);

/** A valid token whose user was deleted since: the token no longer speaks for anyone. */
const goneUser = () => bearerChallenge(REALM, "The user of this token no longer exists.", "invalid_token");

export const usersHandlers: Pick<IdentityHandlers, "registerUser" | "getMe" | "updateMe" | "deleteMe"> = {
  async registerUser(req, { accounts }) {
    await accounts.checkRegistrationRate(req.ip);
    const user = await accounts.registerUser(req.body, requestOrigin(req));
    return { status: 201, body: toUser(user) };
  },

  async getMe({ auth }, { accounts }) {
    const me = userOf(auth);
    if (!me.scopes.includes("profile")) throw insufficientScope(REALM, 'This operation needs the scope "profile".', "profile");
    const user = await accounts.findUserById(me.userId);
    if (!user) throw goneUser();
    return { status: 200, body: withPendingEmail(toUser(user), await accounts.pendingEmailOf(me.userId)) };
  },

  async updateMe(req, { accounts }) {
    const me = userOf(req.auth);
    requireDashboard(me, "change");
    const { email, ...names } = req.body ?? {};
    // X-ID-EVF-3: a new address waits for its link; the name changes at once.
    if (email !== undefined && !(await accounts.requestEmailChange(me.userId, email, {}, requestOrigin(req)))) throw goneUser();
    const user = await accounts.updateProfile(me.userId, names, requestOrigin(req));
    if (!user) throw goneUser();
    return { status: 200, body: withPendingEmail(toUser(user), await accounts.pendingEmailOf(me.userId)) };
  },

  async deleteMe(req, { accounts }) {
    const me = userOf(req.auth);
    requireDashboard(me, "delete");
    if (!(await accounts.deleteUser(me.userId, requestOrigin(req)))) throw goneUser();
    return { status: 204 };
  },
};
