/** What the audit log keeps of a request (X-ID-AUD-1): the client's address and User-Agent, and the admin behind an admin call. */
import type { RequestHeaders } from "../../../server/http/handler-types.ts";
import type { AdminAction, RequestOrigin } from "../domain/audit.ts";
import { adminOf, type IdentityPrincipal } from "../identity-handlers.ts";

/** The client's address (already resolved through TRUST_PROXY) and its User-Agent, when it sent one. */
export function requestOrigin(req: { ip: string; headers: RequestHeaders }): RequestOrigin {
  const agent = req.headers["user-agent"];
  return { address: req.ip, userAgent: typeof agent === "string" ? agent : undefined };
}

/** The admin of an AdminAuth operation and where the call came from. */
export function adminAction(req: { auth: IdentityPrincipal; ip: string; headers: RequestHeaders }): AdminAction {
  return { adminId: adminOf(req.auth).userId, origin: requestOrigin(req) };
}
