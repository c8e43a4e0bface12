/**
 * The signed-in user's session: attaches the user's access token and, for the pair `rb login` stored,
 * refreshes it transparently and saves each rotated pair. Access tokens live one hour (seed §8); users
 * should never see that. A token from `RB_TOKEN` (credentials.ts) is sent as it is and never refreshed.
 */
import { type ApiClient, bearer, isInvalidToken, type ApiResponse, type RepositoryClient, type Sent } from "./api-client.ts";
import type { ConfigStore, TokenPair } from "./config-store.ts";
import { USER_TOKEN_VARIABLE, userCredential, type UserCredential } from "./credentials.ts";
import { CliError, notLoggedIn, problemError, sessionExpired } from "./errors.ts";

/** A typed request made with the signed-in user's `Authorization` header. */
type UserCall<R extends Sent> = (api: RepositoryClient, auth: ReturnType<typeof bearer>) => Promise<R>;

/** Refresh this long before expiry, so a token does not expire between the check and its use. */
const REFRESH_MARGIN_MS = 30_000;

export const environmentTokenRefused = () =>
  new CliError(
    `The token in ${USER_TOKEN_VARIABLE} was refused: it expired or was revoked. Set a fresh access token, or unset ${USER_TOKEN_VARIABLE} to use \`rb login\`.`,
  );

export class UserSession {
  private readonly store: ConfigStore;
  private readonly api: ApiClient;
  private readonly env: NodeJS.ProcessEnv;

  constructor(store: ConfigStore, api: ApiClient, env: NodeJS.ProcessEnv) {
    this.store = store;
    this.api = api;
    this.env = env;
  }

  /** Where this command's user token comes from, if it has one (`rb auth status` shows it). */
  credential(): UserCredential | undefined {
    return userCredential(this.env, this.store.load(), this.api.baseUrl);
  }

  /**
   * A user call whose answer must be 2xx: the body, or the problem as an error. `call` makes the
   * typed request with the `auth` options it is given: `(api, auth) => api.GET("/auth/me", auth)`.
   */
  async call<R extends Sent>(call: UserCall<R>): Promise<NonNullable<R["data"]>> {
    const res = await this.request(call);
    if (res.status < 200 || res.status >= 300) throw problemError(res.status, res.problem);
    return res.body as NonNullable<R["data"]>;
  }

  /** A user call with the refresh rules applied; other non-2xx answers are the caller's to word. */
  async request<R extends Sent>(call: UserCall<R>): Promise<ApiResponse<NonNullable<R["data"]>>> {
    const credential = this.credential();
    if (!credential) throw notLoggedIn();
    if (credential.from === "environment") {
      const res = await this.api.send((api) => call(api, bearer(credential.accessToken)));
      if (isInvalidToken(res)) throw environmentTokenRefused();
      return res;
    }
    let tokens = credential.tokens;
    if (Date.parse(tokens.expiresAt) - Date.now() < REFRESH_MARGIN_MS) tokens = await this.refresh(tokens.refreshToken);
    const accessToken = tokens.accessToken;
    let res = await this.api.send((api) => call(api, bearer(accessToken)));
    // The local clock can disagree with the server's, or the token was revoked: refresh once, retry once.
    if (isInvalidToken(res)) {
      tokens = await this.refresh(tokens.refreshToken);
      const refreshed = tokens.accessToken;
      res = await this.api.send((api) => call(api, bearer(refreshed)));
      if (isInvalidToken(res)) {
        await this.forgetTokens();
        throw sessionExpired();
      }
    }
    return res;
  }

  /**
   * Rotates `used` under the config lock. If another rb process rotated it first, its new pair is
   * in the file and is used as is: replaying `used` would look like theft and revoke the session.
   */
  private async refresh(used: string): Promise<TokenPair> {
    return this.store.withLock(async () => {
      const config = this.store.load();
      if (!config.tokens || config.server !== this.api.baseUrl) throw notLoggedIn();
      if (config.tokens.refreshToken !== used) return config.tokens;
      const res = await this.api.send((api) => api.POST("/auth/refresh", { body: { refreshToken: used } }));
      if (res.status === 401) {
        // Expired, revoked by logout elsewhere, or its family was revoked: the tokens are dead weight.
        this.store.save({ ...config, tokens: undefined });
        throw sessionExpired();
      }
      if (res.status !== 200 || !res.body) throw problemError(res.status, res.problem);
      this.store.save({ ...config, tokens: res.body });
      return res.body;
    });
  }

  private async forgetTokens(): Promise<void> {
    await this.store.update((c) => ({ ...c, tokens: undefined }));
  }
}
