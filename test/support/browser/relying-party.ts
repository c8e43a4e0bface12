/**
 * A tiny client application ("relying party") for the browser test, written the way a third
 * party would write one: every OAuth step goes through oauth4webapi, a real client library, never
 * through the test's own helpers. Discovery from the issuer, PKCE (S256) with state and nonce bound
 * to the browser by a cookie, `validateAuthResponse` (state and RFC 9207 `iss`), the code exchange
 * with `client_secret_basic`, ID token and userinfo checks, and the refresh_token grant.
 *
 * It listens on 127.0.0.1 (a loopback redirect URI, allowed over http by RFC 8252) and records each
 * completed sign-in, so the test can assert what the client actually received.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import * as oauth from "oauth4webapi";
import { request } from "../../../conformance/harness/http.ts";
import { adminTokenViaFlow } from "../../../conformance/harness/oauth-flow.ts";
import type { IdentityTarget } from "../../../conformance/harness/targets.ts";

export interface SignIn {
  /** The state this client sent and got back. */
  state: string;
  accessToken: string;
  refreshToken: string | undefined;
  idToken: string;
  /** ID token claims, validated by oauth4webapi (iss, aud, exp, nonce) and signature-checked against the JWKS. */
  idClaims: JWTPayload;
  /** Access token claims, validated as an RFC 9068 JWT access token (signature, iss, aud, typ). */
  accessClaims: JWTPayload;
  scope: string | undefined;
  expiresIn: number | undefined;
  userinfo: oauth.UserInfoResponse;
}

interface Transaction {
  state: string;
  verifier: string;
  nonce: string;
}

const TX_COOKIE = "rp_tx";
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const html = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body><main>${body}</main></body></html>`;

/** Status and OAuth error code of a failed token request, whichever way oauth4webapi reports it. */
export async function tokenError(err: unknown): Promise<{ status: number; error: string; challenge?: string }> {
  if (err instanceof oauth.ResponseBodyError) return { status: err.status, error: err.error };
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    // Basic authentication failed: RFC 6749 §5.2 answers 401 with a challenge and the JSON body.
    const body = (await err.response.json()) as { error?: string };
    return { status: err.status, error: String(body.error), challenge: err.cause[0]?.scheme };
  }
  throw err;
}

export class RelyingParty {
  url = "";
  redirectUri = "";
  readonly signIns: SignIn[] = [];
  readonly failures: string[] = [];
  private server?: Server;
  private as?: oauth.AuthorizationServer;
  private jwks?: ReturnType<typeof createRemoteJWKSet>;
  private client?: oauth.Client;
  private clientSecret = "";
  private readonly transactions = new Map<string, Transaction>();
  // The issuer is plain http on 127.0.0.1 in the test; oauth4webapi refuses that unless told.
  private readonly options = { [oauth.allowInsecureRequests]: true } as const;

  constructor(
    readonly issuer: string,
    readonly name: string,
  ) {}

  /** Listens on a free 127.0.0.1 port and reads the issuer's OpenID Connect discovery document. */
  async start(): Promise<void> {
    const issuer = new URL(this.issuer);
    this.as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...this.options }));
    this.jwks = createRemoteJWKSet(new URL(this.as.jwks_uri!));
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        this.failures.push(String(err));
        if (!res.headersSent)
          res.writeHead(500, { "content-type": "text/html; charset=utf-8" }).end(html("Error", "<h1>Client error</h1>"));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}`;
    this.redirectUri = `${this.url}/callback`;
  }

  /** The credentials the application got when it was registered. */
  register(clientId: string, clientSecret: string): void {
    this.client = { client_id: clientId };
    this.clientSecret = clientSecret;
  }

  /** A new client secret, as an operator would deploy it after regenerating it. */
  useSecret(clientSecret: string): void {
    this.clientSecret = clientSecret;
  }

  /** The secret currently deployed in the client. */
  get secret(): string {
    return this.clientSecret;
  }

  get clientId(): string {
    return this.client!.client_id;
  }

  /** The refresh_token grant, with the deployed secret unless another one is given. */
  async refresh(refreshToken: string, clientSecret = this.clientSecret): Promise<oauth.TokenEndpointResponse> {
    const response = await oauth.refreshTokenGrantRequest(
      this.as!,
      this.client!,
      oauth.ClientSecretBasic(clientSecret),
      refreshToken,
      this.options,
    );
    return oauth.processRefreshTokenResponse(this.as!, this.client!, response);
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    if (url.pathname === "/login") return this.login(res);
    if (url.pathname === "/callback") return this.callback(req, url, res);
    res.writeHead(404, { "content-type": "text/html; charset=utf-8" }).end(html("Not found", "<h1>Not found</h1>"));
  }

  /** Starts a sign-in: a fresh state, PKCE verifier and nonce, remembered under a cookie. */
  private async login(res: ServerResponse): Promise<void> {
    const tx: Transaction = {
      state: oauth.generateRandomState(),
      verifier: oauth.generateRandomCodeVerifier(),
      nonce: oauth.generateRandomNonce(),
    };
    const id = randomBytes(16).toString("base64url");
    this.transactions.set(id, tx);
    const authorize = new URL(this.as!.authorization_endpoint!);
    authorize.search = new URLSearchParams({
      client_id: this.clientId,
      redirect_uri: this.redirectUri,
      response_type: "code",
      scope: "openid profile email offline_access",
      state: tx.state,
      nonce: tx.nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(tx.verifier),
      code_challenge_method: "S256",
    }).toString();
    res
      .writeHead(302, {
        location: authorize.href,
        "set-cookie": `${TX_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax`,
        "cache-control": "no-store",
      })
      .end();
  }

  /** The redirect back: validate the response, exchange the code, check the tokens, show who signed in. */
  private async callback(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const id = /(?:^|;\s*)rp_tx=([^;]+)/.exec(req.headers.cookie ?? "")?.[1];
    const tx = id ? this.transactions.get(id) : undefined;
    if (id) this.transactions.delete(id); // single use, like the code it protects
    try {
      if (!tx) throw new Error("no sign-in in progress in this browser");
      const params = oauth.validateAuthResponse(this.as!, this.client!, url, tx.state);
      const response = await oauth.authorizationCodeGrantRequest(
        this.as!,
        this.client!,
        oauth.ClientSecretBasic(this.clientSecret),
        params,
        this.redirectUri,
        tx.verifier,
        this.options,
      );
      const tokens = await oauth.processAuthorizationCodeResponse(this.as!, this.client!, response, {
        expectedNonce: tx.nonce,
        requireIdToken: true,
      });
      const idClaims = oauth.getValidatedIdTokenClaims(tokens)!;
      // oauth4webapi trusts the token endpoint's TLS for the ID token; a careful client checks the signature too.
      await jwtVerify(tokens.id_token!, this.jwks!, { issuer: this.as!.issuer, audience: this.clientId });
      const accessClaims = await oauth.validateJwtAccessToken(
        this.as!,
        new Request(this.url, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
        this.clientId,
        this.options,
      );
      const userinfo = await oauth.processUserInfoResponse(
        this.as!,
        this.client!,
        idClaims.sub,
        await oauth.userInfoRequest(this.as!, this.client!, tokens.access_token, this.options),
      );
      this.signIns.push({
        state: tx.state,
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token,
        idToken: tokens.id_token!,
        idClaims,
        accessClaims,
        scope: tokens.scope,
        expiresIn: tokens.expires_in,
        userinfo,
      });
      const who = `${userinfo.given_name ?? ""} ${userinfo.family_name ?? ""}`.trim();
      res
        .writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
        .end(
          html(
            this.name,
            `<h1>Signed in to ${escapeHtml(this.name)}</h1><p>Welcome, <span id="who">${escapeHtml(who)}</span> (<span id="email">${escapeHtml(String(userinfo.email))}</span>).</p>`,
          ),
        );
    } catch (err) {
      const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      this.failures.push(message);
      res
        .writeHead(400, { "content-type": "text/html; charset=utf-8" })
        .end(html("Sign-in failed", `<h1>Sign-in failed</h1><p id="error">${escapeHtml(message)}</p>`));
    }
  }
}

/** What the identity service answered when the relying party was registered (`POST /api/applications`). */
export interface RegisteredApplication {
  id: string;
  clientId: string;
  [setting: string]: unknown;
}

/**
 * Registers `rp` as a confidential client through the admin API (as automation would), with the
 * usual scopes and `extra` settings, and hands it its credentials.
 */
export async function registerRelyingParty(
  rp: RelyingParty,
  adminToken: string,
  extra: Record<string, unknown> = {},
): Promise<RegisteredApplication> {
  const res = await request(rp.issuer, "POST", "/api/applications", {
    token: adminToken,
    json: {
      name: rp.name,
      clientType: "confidential",
      redirectUris: [rp.redirectUri],
      allowedScopes: ["openid", "profile", "email", "offline_access"],
      ...extra,
    },
  });
  if (res.status !== 201 || typeof res.body?.clientSecret !== "string")
    throw new Error(`registering ${rp.name}: ${res.status} ${res.text}`);
  rp.register(res.body.clientId, res.body.clientSecret);
  return res.body as RegisteredApplication;
}

/**
 * A new organization of the in-process identity service, its admin's token, and a started relying
 * party registered in it as `application` with `extra` settings.
 */
export async function relyingPartyOfNewOrganization(
  target: IdentityTarget,
  names: { organization: string; application: string },
  extra: Record<string, unknown> = {},
) {
  if (!target.createOrganization)
    throw new Error("the browser test needs the in-process identity service (unset CONFORMANCE_IDENTITY_URL)");
  const organization = await target.createOrganization(names.organization);
  const adminToken = await adminTokenViaFlow(target, organization.admin);
  const rp = new RelyingParty(target.url, names.application);
  await rp.start();
  const application = await registerRelyingParty(rp, adminToken, extra);
  return { rp, adminToken, application, organization };
}
