/**
 * Application settings rules beyond what the contract's schema can say (it already checks types,
 * sizes, patterns): uniqueness, configured providers, and the redirect URI and logo URL rules
 * re-checked with a real URL parser. Each failure names its field, as the contract's examples do
 * (`body.enabledProviders[0]`).
 */
import { originProblem } from "../../../../server/origins.ts";
import { invalid, type FieldError } from "../../../../server/domain/errors.ts";
import { isLoopbackHost, parseClientUrl } from "../client-urls.ts";
import { redirectUriProblem } from "../oauth/redirect-uris.ts";

export const KNOWN_SCOPES = ["openid", "profile", "email", "offline_access"] as const;

/** Logo URL: absolute `https`, or `http` on a loopback host (development). */
export function logoUrlProblem(uri: string): string | undefined {
  const parsed = parseClientUrl(uri);
  if ("problem" in parsed) return parsed.problem === "port" ? "port must be 1-65535" : "must be an absolute URL";
  const { url } = parsed;
  if (url.username || url.password) return "must not contain credentials";
  if (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname))) return undefined;
  return "must be an https URL (http only for localhost)";
}

export interface SettingsInput {
  redirectUris?: string[];
  allowedScopes?: string[];
  enabledProviders?: string[];
  branding?: { logoUrl?: string; primaryColor?: string; secondaryColor?: string };
  allowedOrigins?: string[] | null;
  apiScopes?: string[];
  postLogoutRedirectUris?: string[];
  backchannelLogoutUri?: string | null;
}

/** Checks the given settings; throws one 400 naming every bad field. Unknown providers are 400 `unknown_provider`. */
export function checkSettings(input: SettingsInput, isConfiguredProvider: (id: string) => boolean): void {
  const errors: FieldError[] = [];
  const duplicates = (field: string, list: string[] | undefined) =>
    list?.forEach((v, i) => {
      if (list.indexOf(v) !== i) errors.push({ field: `body.${field}[${i}]`, message: `duplicate value ${JSON.stringify(v)}` });
    });
  input.redirectUris?.forEach((uri, i) => {
    const why = redirectUriProblem(uri);
    if (why) errors.push({ field: `body.redirectUris[${i}]`, message: why });
  });
  duplicates("redirectUris", input.redirectUris);
  // X-ID-LOGOUT-3: the same rules as redirect URIs (absolute, no fragment, https or loopback http).
  input.postLogoutRedirectUris?.forEach((uri, i) => {
    const why = redirectUriProblem(uri);
    if (why) errors.push({ field: `body.postLogoutRedirectUris[${i}]`, message: why });
  });
  duplicates("postLogoutRedirectUris", input.postLogoutRedirectUris);
  // X-ID-LOGOUT-7: absolute, no fragment, https or loopback http (Back-Channel Logout §2.2); the
  // address it resolves to is checked at each delivery, as webhook URLs are (SSRF).
  if (input.backchannelLogoutUri) {
    const why = redirectUriProblem(input.backchannelLogoutUri);
    if (why) errors.push({ field: "body.backchannelLogoutUri", message: why });
  }
  // X-ID-CORS-2: compared with the browser's `Origin` as exact strings, so only the form browsers send.
  input.allowedOrigins?.forEach((origin, i) => {
    const why = originProblem(origin, { loopbackHttpOnly: true });
    if (why) errors.push({ field: `body.allowedOrigins[${i}]`, message: why });
  });
  duplicates("allowedOrigins", input.allowedOrigins ?? undefined);
  input.allowedScopes?.forEach((s, i) => {
    if (!(KNOWN_SCOPES as readonly string[]).includes(s))
      errors.push({ field: `body.allowedScopes[${i}]`, message: `must be one of ${KNOWN_SCOPES.join(", ")}` });
  });
  duplicates("allowedScopes", input.allowedScopes);
  // X-ID-RES-2: the OpenID scopes are allowedScopes' alone, so a scope's meaning never depends on a resource.
  input.apiScopes?.forEach((s, i) => {
    if ((KNOWN_SCOPES as readonly string[]).includes(s))
      errors.push({ field: `body.apiScopes[${i}]`, message: "must not be an OpenID scope (allowedScopes holds those)" });
  });
  duplicates("apiScopes", input.apiScopes);
  duplicates("enabledProviders", input.enabledProviders);
  if (input.branding?.logoUrl !== undefined) {
    const why = logoUrlProblem(input.branding.logoUrl);
    if (why) errors.push({ field: "body.branding.logoUrl", message: why });
  }
  for (const key of ["primaryColor", "secondaryColor"] as const) {
    const colour = input.branding?.[key];
    if (colour !== undefined && !/^#[0-9A-Fa-f]{6}$/.test(colour))
      errors.push({ field: `body.branding.${key}`, message: "must be a hex colour #RRGGBB" });
  }
  const unknown = (input.enabledProviders ?? []).map((id, i) => ({ id, i })).filter(({ id }) => !isConfiguredProvider(id));
  if (errors.length) {
    for (const { id, i } of unknown)
      errors.push({ field: `body.enabledProviders[${i}]`, message: `unknown provider ${JSON.stringify(id)}` });
    throw invalid("validation_failed", "Some application settings are invalid.", errors);
  }
  if (unknown.length) {
    throw invalid(
      "unknown_provider",
      `The provider ${JSON.stringify(unknown[0]!.id)} is not configured on this deployment.`,
      unknown.map(({ id, i }) => ({ field: `body.enabledProviders[${i}]`, message: `unknown provider ${JSON.stringify(id)}` })),
    );
  }
}
