/**
 * The request id (X-API-12): every response carries `X-Request-Id`, and every log line of the
 * request has it. A proxy of ours (TRUST_PROXY) may pass one along, so one id follows a request
 * through the proxy's logs and ours; from anyone else the header is ignored, so that a client
 * cannot put words in our logs. An id we accept is 1-128 visible ASCII characters (no spaces, no
 * control characters): safe in a header and a log line. Otherwise we make one (a UUID).
 */
import { randomUUID } from "node:crypto";
import { isTrustedProxy, type TrustProxy } from "./trusted-proxy.ts";

const ACCEPTABLE = /^[\x21-\x7e]{1,128}$/;

/** The id of a request whose `X-Request-Id` header is `sent` and whose connection comes from `peer`. */
export function requestIdFor(sent: string | string[] | undefined, peer: string | undefined, trust: TrustProxy): string {
  if (typeof sent === "string" && ACCEPTABLE.test(sent) && isTrustedProxy(trust, peer)) return sent;
  return randomUUID();
}
