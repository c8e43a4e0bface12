/**
 * panva's oidc-provider as the benchmark's reference, configured to do the same work per request
 * as ours:
 * - the same confidential client (client_secret_basic), PKCE S256, scopes `openid email
 *   offline_access`, the same key type (one ES256 key signs access and ID tokens);
 * - access tokens as ES256 JWTs (RFC 9068, through its resource-indicators feature and a default
 *   resource), not its default opaque tokens, since ours are JWTs too;
 * - the client_credentials grant for the client itself (its `clientCredentials` feature), the
 *   access token the same resource's ES256 JWT;
 * - refresh tokens rotated on every use (`rotateRefreshToken: true`), as ours are (its default
 *   rotates confidential clients' tokens only late in their life);
 * - by default its own in-memory adapter class over an unbounded store (the bundled store is an LRU
 *   of 1000 entries, which would evict pre-minted codes during a run): nothing is stored durably,
 *   and oidc-provider's docs call that adapter fit for development only ("This is fine as long as
 *   you develop, configure and generally just play around since every time you restart your
 *   process all information will be lost", docs/README.md, "adapter"): the `oidc-provider-memory`
 *   peer. BENCH_THEIRS_STORE=sqlite|postgres (set per process by bench/token/peers.ts) puts it on a
 *   durable adapter instead (oidc-provider-adapter.ts), the same guarantee as ours: the
 *   `oidc-provider-durable` peer.
 *
 * Codes are minted through its models (`Grant`, `AuthorizationCode`), as its authorization
 * endpoint would save them after consent.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";
import { BENCH_API, BENCH_SCOPE, type BenchServer, type MintedCode } from "./protocol.ts";
import { openPostgresStore, openSqliteStore, theirsStore, type DurableStore } from "./oidc-provider-adapter.ts";

const REDIRECT_URI = "https://client.example.com/callback";
const { resource: RESOURCE, scope: API_SCOPE } = BENCH_API;
const ACCOUNT_ID = "bench-user";

/** The few parts of the package used here (it ships no type declarations). */
interface Model {
  save(): Promise<string>;
}
interface GrantModel extends Model {
  addOIDCScope(scope: string): void;
  addResourceScope(resource: string, scope: string): void;
}
interface ProviderInstance {
  callback(): RequestListener;
  Client: { find(id: string): Promise<unknown> };
  Grant: new (o: { accountId: string; clientId: string }) => GrantModel;
  AuthorizationCode: new (o: Record<string, unknown>) => Model;
}

// Deep imports by a variable name: the package has no "exports" map and no declarations.
const load = async <T>(name: string): Promise<T> => (await import(name)) as T;

export async function startOidcProvider(): Promise<BenchServer> {
  const { default: Provider } = await load<{ default: new (issuer: string, config: unknown) => ProviderInstance }>("oidc-provider");
  const { default: MemoryAdapter } = await load<{ default: new (model: string, store: unknown) => unknown }>(
    "oidc-provider/lib/adapters/memory_adapter.js",
  );
  const { default: LRU } = await load<{ default: new (o: { maxSize: number }) => unknown }>("oidc-provider/lib/helpers/lru.js");

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: "bench-es256", alg: "ES256", use: "sig" };
  const storeKind = theirsStore();
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  if (storeKind === "postgres" && !databaseUrl) throw new Error("BENCH_THEIRS_STORE=postgres needs BENCH_DATABASE_URL");
  const durable: DurableStore | undefined =
    storeKind === "sqlite" ? openSqliteStore() : storeKind === "postgres" ? await openPostgresStore(databaseUrl!) : undefined;
  const store = new LRU({ maxSize: 10_000_000 });
  const client = { clientId: "bench-client", clientSecret: `cs_${randomBytes(32).toString("base64url")}`, redirectUri: REDIRECT_URI };

  const provider = new Provider(url, {
    adapter: durable ? (model: string) => durable.adapterFor(model) : (model: string) => new MemoryAdapter(model, store),
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token", "client_credentials"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "ES256",
      },
    ],
    jwks: { keys: [jwk] },
    findAccount: async (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: async () => ({ sub, email: "bench@example.com", email_verified: false }),
    }),
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    scopes: ["openid", "email", "offline_access", API_SCOPE],
    ttl: { AuthorizationCode: 600, AccessToken: 3600, IdToken: 3600, RefreshToken: 30 * 24 * 3600 },
    rotateRefreshToken: true,
    features: {
      // The client_credentials row: the same JWT access token for the resource, no refresh token.
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async () => ({
          scope: API_SCOPE,
          audience: RESOURCE,
          accessTokenFormat: "jwt",
          accessTokenTTL: 3600,
          jwt: { sign: { alg: "ES256" } },
        }),
      },
    },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
  });
  server.on("request", provider.callback());
  const clientModel = await provider.Client.find(client.clientId);

  /** One code as the authorization endpoint saves it: a grant with the consented scopes, then the code. */
  async function mintOne(): Promise<MintedCode> {
    const verifier = randomBytes(32).toString("base64url");
    const grant = new provider.Grant({ accountId: ACCOUNT_ID, clientId: client.clientId });
    grant.addOIDCScope(BENCH_SCOPE);
    grant.addResourceScope(RESOURCE, API_SCOPE);
    const grantId = await grant.save();
    const code = await new provider.AuthorizationCode({
      accountId: ACCOUNT_ID,
      client: clientModel,
      grantId,
      authTime: Math.floor(Date.now() / 1000),
      scope: `${BENCH_SCOPE} ${API_SCOPE}`,
      resource: RESOURCE,
      redirectUri: REDIRECT_URI,
      codeChallenge: createHash("sha256").update(verifier).digest("base64url"),
      codeChallengeMethod: "S256",
      sessionUid: randomUUID(),
    }).save();
    return { code, verifier };
  }

  return {
    url,
    tokenPath: "/token",
    client,
    notes: `oidc-provider (${durable ? durable.describe : "in-memory adapter, nothing stored durably"}), ES256 JWT access tokens (resource indicator) + ID tokens, rotateRefreshToken: true`,
    async mintCodes(count) {
      // Up to 100 at a time, as ours: on PostgreSQL each save waits for its commit.
      const codes: MintedCode[] = [];
      while (codes.length < count) codes.push(...(await Promise.all(Array.from({ length: Math.min(100, count - codes.length) }, mintOne))));
      return codes;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await durable?.close();
    },
  };
}
