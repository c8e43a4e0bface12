/**
 * Authentication methods and levels (X-ID-MFA-5, X-ID-MFA-6). A session records the methods of its
 * sign-in as RFC 8176 `amr` values; its level (`acr`) follows from them: two factors when `mfa` is
 * among them, one otherwise. The level names are this deployment's URNs, shaped as Okta's
 * (`urn:okta:loa:1fa:any`) and ordered as Keycloak's acr-to-LoA map: a request for the higher one
 * asks for the second factor.
 */
export const ACR_ONE_FACTOR = "urn:identity:loa:1fa";
export const ACR_TWO_FACTORS = "urn:identity:loa:2fa";
export const ACR_VALUES_SUPPORTED = [ACR_ONE_FACTOR, ACR_TWO_FACTORS] as const;

/** RFC 8176 §2: a password; `fed` (not registered, as Microsoft Entra writes it): an upstream identity provider. */
export type FirstFactorMethod = "pwd" | "fed";

/** The methods a stored `amr` column holds; null (rows written before second factors): a password. */
export const amrOf = (column: string | null | undefined): string[] => (column ? column.split(" ") : ["pwd"]);

/** The level of a sign-in made with `amr`. */
export const acrOf = (amr: readonly string[]): string => (amr.includes("mfa") ? ACR_TWO_FACTORS : ACR_ONE_FACTOR);

/** The methods after a second factor of `added` methods: the first ones, the new ones and `mfa` (RFC 8176 §2), once each. */
export const withSecondFactor = (first: readonly string[], added: readonly string[]): string[] => [
  ...new Set([...first.filter((m) => m !== "mfa"), ...added, "mfa"]),
];

/**
 * Whether `acr_values` (OpenID Connect Core §3.1.2.1: space-separated, in order of preference)
 * asks for two factors: only when every value it names that this server knows is the two-factor
 * one. Unknown values are ignored (the claim is voluntary).
 */
export function asksForTwoFactors(acrValues: string | undefined): boolean {
  const known = (acrValues ?? "").split(" ").filter((v) => (ACR_VALUES_SUPPORTED as readonly string[]).includes(v));
  return known.length > 0 && known.every((v) => v === ACR_TWO_FACTORS);
}
