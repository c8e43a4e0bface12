/** `GET /oauth/userinfo` (OpenID Connect Core §5.3): claims by scope (ID-SCOPE-1), RFC 6750 errors. */
import { bearerChallenge, insufficientScope } from "../../server/http/problem.ts";
import { REALM } from "./domain/access-tokens.ts";
import { profileClaims } from "./domain/oauth/profile-claims.ts";
import { userOf, type IdentityHandlers } from "./identity-handlers.ts";

export const userinfoHandlers: Pick<IdentityHandlers, "userInfo"> = {
  async userInfo({ auth }, { accounts }) {
    const principal = userOf(auth);
    if (!principal.scopes.includes("openid")) throw insufficientScope(REALM, 'UserInfo needs the scope "openid".', "openid");
    const user = await accounts.findUserById(principal.userId);
    if (!user) throw bearerChallenge(REALM, "The user of this token no longer exists.", "invalid_token");
    return {
      status: 200,
      headers: { "Cache-Control": "no-store" },
      body: {
        sub: user.id,
        ...(principal.scopes.includes("profile") ? profileClaims(user) : {}),
        ...(principal.scopes.includes("email") ? { email: user.email, email_verified: Boolean(user.email_verified) } : {}),
      },
    };
  },
};
