/**
 * Codes minted through Keycloak's own login path, as a browser gets them: the authorization request
 * (PKCE S256, KEYCLOAK_SCOPE), the login form posted with the user's credentials and the
 * session's cookies, and the code read from the redirect to the client. Each code is a new browser
 * (cookies of its own), so each is a sign-in of its own and a user session of its own.
 */
import { createHash, randomBytes } from "node:crypto";
import { Agent, request } from "undici";
import { BENCH_SCOPE, type BenchClient, type MintedCode } from "./protocol.ts";
import { REALM, type BenchUser } from "./keycloak-realm.ts";

/**
 * The benchmark's scopes less `offline_access`. With it, Keycloak creates the offline session when the code
 * is exchanged, and refuses a few refreshes in a hundred of the tokens so issued ("Refresh token issued before
 * the user session started": the token's `iat` and the session's start are whole seconds, taken at two
 * moments of the exchange). Without it, the refresh token belongs to the sign-in's session, which Keycloak
 * 26 also keeps in the database (persistent user sessions), and every refresh is answered. The exchange
 * then writes less than with an offline session: a difference in Keycloak's favour.
 */
export const KEYCLOAK_SCOPE = BENCH_SCOPE.split(" ")
  .filter((s) => s !== "offline_access")
  .join(" ");

/** Sign-ins in flight while minting (not timed; Keycloak checks each password and stores each session). */
const MINT_CONCURRENCY = 16;

/** A browser's cookies: name=value of every Set-Cookie seen, for the Cookie header of the next request. */
class CookieJar {
  readonly #cookies = new Map<string, string>();
  take(header: string | string[] | undefined): void {
    for (const cookie of header === undefined ? [] : Array.isArray(header) ? header : [header]) {
      const pair = cookie.split(";")[0]!;
      const eq = pair.indexOf("=");
      if (eq > 0) this.#cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

/** What a Keycloak page says went wrong: its feedback or field error, else its start. */
function pageMessage(html: string): string {
  const message = /id="input-error[^"]*"[^>]*>([^<]*)</.exec(html) ?? /class="[^"]*kc-feedback-text[^"]*"[^>]*>([^<]*)</.exec(html);
  return (message?.[1] ?? html.slice(0, 300)).trim();
}

/** The login form's action URL from the login page's HTML (its `&amp;`s decoded). */
function formAction(html: string): string {
  const match =
    /<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"/.exec(html) ?? /action="([^"]+login-actions\/authenticate[^"]*)"/.exec(html);
  if (!match) throw new Error(`Keycloak login page without a login form: ${html.slice(0, 300)}`);
  return match[1]!.replaceAll("&amp;", "&");
}

export function codeMinter(base: string, client: BenchClient, user: BenchUser) {
  const dispatcher = new Agent({ connections: MINT_CONCURRENCY, keepAliveTimeout: 10_000 });
  const realmBase = `${base}/realms/${REALM}/protocol/openid-connect`;

  async function mintOne(): Promise<MintedCode> {
    const verifier = randomBytes(32).toString("base64url");
    const state = randomBytes(16).toString("base64url");
    const authorize = new URL(`${realmBase}/auth`);
    authorize.search = new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: "code",
      scope: KEYCLOAK_SCOPE,
      state,
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    }).toString();
    const jar = new CookieJar();
    const page = await request(authorize, { dispatcher });
    jar.take(page.headers["set-cookie"]);
    const html = await page.body.text();
    if (page.statusCode !== 200) throw new Error(`Keycloak authorization request: ${page.statusCode} ${html.slice(0, 300)}`);
    const login = await request(formAction(html), {
      dispatcher,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header() },
      body: new URLSearchParams({ username: user.username, password: user.password, credentialId: "" }).toString(),
    });
    const answer = await login.body.text();
    const location = login.headers.location;
    if (login.statusCode !== 302 || typeof location !== "string")
      throw new Error(`Keycloak login: ${login.statusCode} ${pageMessage(answer)}`);
    const redirect = new URL(location);
    const code = redirect.searchParams.get("code");
    if (!location.startsWith(client.redirectUri) || redirect.searchParams.get("state") !== state || !code)
      // To its own login page again: it did not find the sign-in the form belongs to (its auth session).
      throw new Error(`Keycloak login redirected elsewhere: ${location}`);
    return { code, verifier };
  }

  return {
    /** `count` fresh codes, `concurrency` sign-ins at a time (MINT_CONCURRENCY at most). */
    async mint(count: number, concurrency = MINT_CONCURRENCY): Promise<MintedCode[]> {
      const codes: MintedCode[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(concurrency, MINT_CONCURRENCY, count) }, async () => {
          while (next++ < count) codes.push(await mintOne());
        }),
      );
      return codes;
    },
    close: () => dispatcher.close(),
  };
}
