/**
 * The signed-in user's session: attaches the user's access token and, for the pair `rb login` stored,
 * refreshes it transparently and saves each rotated pair. Access tokens live one hour (seed §8); users
 * should never see that. A token from `RB_TOKEN` (credentials.ts) is sent as it is and never refreshed.
 */
import { type ApiClient, bearer, isInvalidToken, type ApiResponse, type RepositoryClient, type Sent } from "./api-client.ts";
import type { ConfigStore, StoredConfig, StoredIssuer, StoredTokens } from "./config-store.ts";
import { USER_TOKEN_VARIABLE, userCredential, type UserCredential } from "./credentials.ts";
import { CliError, notLoggedIn, problemError, sessionExpired } from "./errors.ts";
import { discover, refreshAtIssuer } from "./identity-client.ts";

/** A typed request made with the signed-in user's `Authorization` header. */
type UserCall<R extends Sent> = (api: RepositoryClient, auth: ReturnType<typeof bearer>) => Promise<R>;

/** Refresh this long before expiry, so a token does not expire between the check and its use. */
const REFRESH_MARGIN_MS = 30_000;

export const environmentTokenRefused = () =>
  new CliError(
    `The token in ${USER_TOKEN_VARIABLE} was refused: it expired or was revoked. Set a fresh access token, or unset ${USER_TOKEN_VARIABLE} to use \`rb login\`.`,
  );

const deviceLoginEnded = (why: string) => new CliError(`Your device login has ended: ${why}. Run \`rb login --device\` again.`);

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
   * A pair of `rb login --device` is refreshed at its issuer, as its client (X-CLI-8).
   */
  private async refresh(used: string | undefined): Promise<StoredTokens> {
    return this.store.withLock(async () => {
      const config = this.store.load();
      if (!config.tokens || config.server !== this.api.baseUrl) throw notLoggedIn();
      if (config.tokens.refreshToken !== used) return config.tokens;
      if (config.issuer) return this.refreshDeviceLogin(config, config.issuer, used);
      if (!used) throw notLoggedIn();
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

  /** Under the lock of `refresh`: the device login's pair, rotated by its issuer, or forgotten when it cannot be. */
  private async refreshDeviceLogin(config: StoredConfig, issuer: StoredIssuer, used: string | undefined): Promise<StoredTokens> {
    const forget = () => this.store.save({ ...config, tokens: undefined, issuer: undefined });
    if (!used) {
      forget();
      throw deviceLoginEnded("it has no refresh token (the identity service granted no offline_access)");
    }
    const tokens = await refreshAtIssuer(await discover(issuer.url, issuer.clientId), used, issuer.resource);
    if (!tokens) {
      forget();
      throw deviceLoginEnded(`${issuer.url} refused its refresh token (expired, revoked, or signed out there)`);
    }
    // RFC 6749 §6: an issuer that does not rotate keeps the refresh token it was sent.
    const pair: StoredTokens = { ...tokens, refreshToken: tokens.refreshToken ?? used };
    this.store.save({ ...config, tokens: pair });
    return pair;
  }

  private async forgetTokens(): Promise<void> {
    await this.store.update(({ issuer: _issuer, ...c }) => ({ ...c, tokens: undefined }));
  }
}
