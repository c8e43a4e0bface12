/**
 * Who this server is to an authenticator (WebAuthn §5.4.2): the relying party id is the host of the
 * public URL, and the only origin whose ceremonies are accepted is that URL's origin. A page served
 * under any other name (a proxy's, an IP address) cannot register or use a passkey, by design of
 * WebAuthn: credentials are scoped to the RP id.
 */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

export function relyingPartyOf(publicUrl: string): RelyingParty {
  const url = new URL(publicUrl);
  return { id: url.hostname, origin: url.origin, name: url.hostname };
}

/**
 * The RFC 8176 `amr` values of a passkey sign-in (X-ID-PK-3): `hwk` for a device-bound key, `swk` for
 * a synced one (its private key leaves the hardware), and `mfa`, because user verification is
 * required (the device's PIN or biometric, with possession of the key).
 */
export const passkeyAmr = (deviceType: string): string[] => [deviceType === "singleDevice" ? "hwk" : "swk", "mfa"];
