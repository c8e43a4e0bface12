/** The social (upstream) identity providers of this deployment, from IDENTITY_SOCIAL_PROVIDERS. */
import type { Config, SocialProviderConfig } from "../../../../server/config.ts";

export type { SocialProviderConfig };

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

/** The configured providers (validated at start by server/config.ts), in configuration order. */
export function createProviders(config: Config) {
  const list: SocialProviderConfig[] = config.IDENTITY_SOCIAL_PROVIDERS;
  const byId = new Map(list.map((p) => [p.id, p]));
  return {
    configuredProviders: (): SocialProviderConfig[] => list,
    findProvider: (id: string): SocialProviderConfig | undefined => byId.get(id),
    publicProviders: (): PublicProvider[] => list.map(toPublicProvider),
  };
}

export type Providers = ReturnType<typeof createProviders>;
