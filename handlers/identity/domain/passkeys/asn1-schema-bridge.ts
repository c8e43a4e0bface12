/**
 * Makes ES256 passkey signatures verifiable when the install holds two copies of
 * `@peculiar/asn1-schema`: `@simplewebauthn/server` parses a signature with the hoisted copy, while
 * `@peculiar/asn1-ecc` declared its `ECDSASigValue` schema in its own nested copy, so the parse
 * fails ("Cannot get schema for 'ECDSASigValue'") and every ES256 assertion would be refused.
 * When (and only when) the hoisted copy lacks the schema, it is declared there too, with the same
 * two INTEGER fields. One copy (an `overrides` entry pinning `@peculiar/asn1-schema` to the range
 * `@peculiar/asn1-ecc` asks for) makes this a no-op, and then it can go.
 */
import { ECDSASigValue } from "@peculiar/asn1-ecc";
import { AsnIntegerArrayBufferConverter, AsnParser, AsnProp, AsnPropTypes, AsnSerializer } from "@peculiar/asn1-schema";

function hoistedCopyKnowsSchema(): boolean {
  try {
    AsnParser.parse(
      AsnSerializer.serialize(new ECDSASigValue({ r: new Uint8Array([1]).buffer, s: new Uint8Array([1]).buffer })),
      ECDSASigValue,
    );
    return true;
  } catch {
    return false;
  }
}

let bridged = false;

export function bridgeEcdsaSignatureSchema(): void {
  if (bridged) return;
  bridged = true;
  if (hoistedCopyKnowsSchema()) return;
  for (const field of ["r", "s"])
    AsnProp({ type: AsnPropTypes.Integer, converter: AsnIntegerArrayBufferConverter })(ECDSASigValue.prototype, field);
}
