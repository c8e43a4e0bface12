/** POST /auth/login, /auth/refresh, /auth/logout and GET /auth/me. */
import { userId, type RepositoryHandlers } from "./repository-handlers.ts";

export const authHandlers: Pick<RepositoryHandlers, "login" | "refresh" | "logout" | "me"> = {
  async login({ body, ip }, { accounts, tokens }) {
    const user = await accounts.login(body.email, body.password, ip);
    return { status: 200, body: await tokens.issuePair(user.id) };
  },

  async refresh({ body }, { tokens }) {
    return { status: 200, body: await tokens.rotate(body.refreshToken) };
  },

  async logout({ body }, { tokens }) {
    await tokens.revoke(body.refreshToken);
    return { status: 204 };
  },

  async me({ auth }, { accounts }) {
    const user = await accounts.currentUser(userId(auth));
    return { status: 200, body: { id: user.id, email: user.email, createdAt: user.created_at } };
  },
};
