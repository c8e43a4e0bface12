/** Handlers of /api/users: registration and the signed-in user's own account (X-ID-USR-1). */
import { bearerChallenge, insufficientScope } from "../../server/http/problem.ts";
import { userOf, type IdentityHandlers } from "./identity-handlers.ts";
import { DASHBOARD_CLIENT_ID, REALM, type UserPrincipal } from "./domain/access-tokens.ts";
import { toUser } from "./shared/mappers.ts";

/** Account changes are for the user's own first-party dashboard only: third-party applications cannot change accounts. */
function requireDashboard(user: UserPrincipal, action: string): void {
  if (user.clientId !== DASHBOARD_CLIENT_ID) throw insufficientScope(REALM, `Only the identity dashboard can ${action} an account.`);
}

/** A valid token whose user was deleted since: the token no longer speaks for anyone. */
const goneUser = () => bearerChallenge(REALM, "The user of this token no longer exists.", "invalid_token");

export const usersHandlers: Pick<IdentityHandlers, "registerUser" | "getMe" | "updateMe" | "deleteMe"> = {
  async registerUser({ body, ip }, { accounts }) {
    await accounts.checkRegistrationRate(ip);
    const user = await accounts.registerUser(body);
    return { status: 201, body: toUser(user) };
  },

  async getMe({ auth }, { accounts }) {
    const me = userOf(auth);
    if (!me.scopes.includes("profile")) throw insufficientScope(REALM, 'This operation needs the scope "profile".', "profile");
    const user = await accounts.findUserById(me.userId);
    if (!user) throw goneUser();
    return { status: 200, body: toUser(user) };
  },

  async updateMe({ auth, body }, { accounts }) {
    const me = userOf(auth);
    requireDashboard(me, "change");
    const user = await accounts.updateProfile(me.userId, body ?? {});
    if (!user) throw goneUser();
    return { status: 200, body: toUser(user) };
  },

  async deleteMe({ auth }, { accounts }) {
    const me = userOf(auth);
    requireDashboard(me, "delete");
    if (!(await accounts.deleteUser(me.userId))) throw goneUser();
    return { status: 204 };
  },
};
