/** Handler of `GET /api/audit-events`: the admin's organization's audit log (X-ID-AUD-3, X-ID-AUD-4). */
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { toAuditEvent } from "./shared/mappers.ts";

export const auditEventsHandlers: Pick<IdentityHandlers, "listAuditEvents"> = {
  async listAuditEvents({ auth, query }, { audit }) {
    const { organizationId } = adminOf(auth);
    const list = await audit.list(organizationId, {
      ...paging(query),
      cursor: query.cursor,
      type: query.type,
      userId: query.userId,
      applicationId: query.applicationId,
      // The contract checked the format; stored times are ISO UTC with milliseconds, so compare like with like.
      since: query.since === undefined ? undefined : new Date(query.since).toISOString(),
      until: query.until === undefined ? undefined : new Date(query.until).toISOString(),
    });
    return { status: 200, body: { ...list, items: list.items.map(toAuditEvent) } };
  },
};
