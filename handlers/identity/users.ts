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
    return { status: 200, body: toUser(user) };
  },

  async updateMe(req, { accounts }) {
    const me = userOf(req.auth);
    requireDashboard(me, "change");
    const user = await accounts.updateProfile(me.userId, req.body ?? {}, requestOrigin(req));
    if (!user) throw goneUser();
    return { status: 200, body: toUser(user) };
  },

  async deleteMe(req, { accounts }) {
    const me = userOf(req.auth);
    requireDashboard(me, "delete");
    if (!(await accounts.deleteUser(me.userId, requestOrigin(req)))) throw goneUser();
    return { status: 204 };
  },
};
