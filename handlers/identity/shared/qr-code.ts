/** The QR code of an enrolment (X-ID-MFA-2): an `otpauth://` URI as inline SVG, so the page needs no image request and no script. */
import QRCode from "qrcode";
import type { EnrolmentView } from "../views/second-factor.ts";

export async function enrolmentView(e: { secret: string; uri: string }): Promise<EnrolmentView> {
  const svg = await QRCode.toString(e.uri, { type: "svg", errorCorrectionLevel: "M", margin: 2, width: 200 });
  return { qrSvg: svg.replace(/^<\?xml[^>]*>\s*/, ""), secret: e.secret };
}
