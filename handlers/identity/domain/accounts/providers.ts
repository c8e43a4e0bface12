/** The social (upstream) identity providers of this deployment, from IDENTITY_SOCIAL_PROVIDERS. */

interface ProviderCommon {
  /** Lower-case letters, digits and '-', at most 32: what applications enable it by. */
  id: string;
  name: string;
  clientId: string;
  clientSecret: string;
  scope: string;
}

/**
 * One upstream provider: any OpenID Connect provider by its issuer, or a plain OAuth 2.0 one
 * (GitHub) by its endpoints. handlers/identity/config.ts validates the configured list at start.
 */
export type SocialProviderConfig =
  | (ProviderCommon & { type: "oidc"; issuer: string })
  | (ProviderCommon & { type: "oauth2"; authorizationEndpoint: string; tokenEndpoint: string; userinfoEndpoint: string });

/** What may be shown to admins and on login pages: never the client secret. */
export interface PublicProvider {
  id: string;
  name: string;
  type: "oidc" | "oauth2";
  issuer?: string;
}

export const toPublicProvider = (p: SocialProviderConfig): PublicProvider => ({
  id: p.id,
  name: p.name,
  type: p.type,
  ...(p.type === "oidc" ? { issuer: p.issuer } : {}),
});

/** The configured providers, in configuration order. */
export function createProviders(list: readonly SocialProviderConfig[]) {
  const byId = new Map(list.map((p) => [p.id, p]));
  return {
    configuredProviders: (): readonly SocialProviderConfig[] => list,
    findProvider: (id: string): SocialProviderConfig | undefined => byId.get(id),
    publicProviders: (): PublicProvider[] => list.map(toPublicProvider),
  };
}

export type Providers = ReturnType<typeof createProviders>;
