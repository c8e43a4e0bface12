/**
 * The audit log (X-ID-AUD-1..5): the domain's one way to record a security event, and the admin's
 * view of the log. Every part of the service records through `record`, in the transaction of the
 * change the event is about when there is one (X-ID-AUD-2), so a rolled-back change records
 * nothing; an event that changes nothing else (a failed sign-in) passes no transaction and is
 * written on its own.
 *
 *   await ctx.audit.record(trx, {
 *     type: "user.updated",
 *     actor: { type: "user", id: userId },
 *     userId,
 *     origin,                      // { address, userAgent } of the request, when there is one
 *     details: { changedFields: ["firstName"] },
 *   });
 *
 * `details` holds facts (reason codes, field names, a method), never a secret: keys that name one
 * (password, secret, token, code, hash) are dropped before the row is written.
 */
import { invalid } from "../../../server/domain/errors.ts";
import type { Clock } from "../../../server/clock.ts";
import { uuidv7 } from "../../../server/ids.ts";
import type { Transactor, Tx } from "../../../server/storage/transaction.ts";
import type { ApplicationStore } from "../storage/applications.ts";
import type { AuditEventKey, AuditEventPosition, AuditEventStore } from "../storage/audit-events.ts";
import type { AuditEventRow } from "../storage/schema.ts";
import { type AuditWebhooks, isSecurityEvent } from "./audit-webhooks.ts";

/** The event types of the log, as spec/identity/audit.tsp lists them. */
export type AuditEventType =
  | "user.created"
  | "user.updated"
  | "user.deleted"
  | "user.signed_in"
  | "user.sign_in_failed"
  | "session.ended"
  | "token.revoked"
  | "application.created"
  | "application.updated"
  | "application.deleted"
  | "application.secret_regenerated"
  | "webhook.created"
  | "webhook.updated"
  | "webhook.deleted"
  | "webhook.secret_regenerated"
  | "user.password_changed"
  | "user.factor_enrolled"
  | "user.factor_removed"
  | "user.recovery_codes_regenerated"
  | "user.recovery_code_used"
  | "user.second_factor_failed"
  | "user.application_access_removed"
  | "user.disabled"
  | "user.enabled"
  | "user.removed"
  | "user.password_reset_requested"
  | "user.password_reset"
  | "user.email_verified"
  | "user.email_change_requested"
  | "user.email_changed"
  | "user.passkey_renamed"
  | "user.device_approved"
  | "user.device_denied";

/** Who caused an event: a user on their own account, an organization's admin, or the service. No id: nobody proved who they are. */
export interface AuditActor {
  type: "user" | "admin" | "system";
  id?: string | undefined;
}

/** What a request tells of its client: its address (after TRUST_PROXY) and its User-Agent. */
export interface RequestOrigin {
  address?: string | undefined;
  userAgent?: string | undefined;
}

/** An admin's change through the administration API: who (the admin's user id) and from where. */
export interface AdminAction {
  adminId: string;
  origin?: RequestOrigin | undefined;
}

export type AuditDetails = Record<string, string | number | boolean | string[] | null>;

/** One event to record. `organizationId` defaults to the application's organization (X-ID-AUD-3). */
export interface AuditEntry {
  type: AuditEventType;
  actor: AuditActor;
  userId?: string | undefined;
  organizationId?: string | undefined;
  applicationId?: string | undefined;
  origin?: RequestOrigin | undefined;
  details?: AuditDetails;
}

/** An admin's list request (X-ID-AUD-4): filters, and a bounded `page` or the `cursor` a previous page gave. */
export interface AuditListRequest {
  type?: AuditEventType | undefined;
  userId?: string | undefined;
  applicationId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  page: number;
  pageSize: number;
  cursor?: string | undefined;
}

/** `OFFSET` paging stops here (page × pageSize), as the webhook history does; deeper pages are reached with the cursor. */
export const MAX_AUDIT_OFFSET_ROWS = 10_000;
const USER_AGENT_MAX = 512;
const ADDRESS_MAX = 64;
/** Detail keys that would name a secret: never written, whatever a caller passes. */
const SECRET_KEY = /^(password|secret|token|code|hash)$|(Password|Secret|Token|Code|Hash)$|_hash$/;

/**
 * `webhooks` (X-ID-AUD-7) delivers the security events to the outbox in the transaction of the row;
 * `transaction` opens one for an event recorded on its own (a failed sign-in) that webhooks receive.
 */
export function createAudit(deps: {
  store: AuditEventStore;
  applications: ApplicationStore;
  clock: Clock;
  webhooks?: AuditWebhooks;
  transaction?: Transactor;
}) {
  const { store, applications, clock, webhooks, transaction } = deps;

  async function record(tx: Tx | undefined, entry: AuditEntry): Promise<void> {
    // Row and delivery commit together: an event webhooks receive is never written outside a transaction.
    if (!tx && webhooks && transaction && isSecurityEvent(entry.type)) return transaction((trx) => record(trx, entry));
    const now = clock.now();
    let organizationId = entry.organizationId;
    if (organizationId === undefined && entry.applicationId !== undefined) {
      organizationId = (await applications.findById(entry.applicationId, tx))?.organizationId ?? undefined;
    }
    const row: AuditEventRow = {
      id: uuidv7(now.getTime()),
      type: entry.type,
      occurred_at: now.toISOString(),
      actor_type: entry.actor.type,
      actor_id: entry.actor.id ?? null,
      user_id: entry.userId ?? null,
      organization_id: organizationId ?? null,
      application_id: entry.applicationId ?? null,
      client_address: entry.origin?.address?.slice(0, ADDRESS_MAX) || null,
      user_agent: entry.origin?.userAgent?.slice(0, USER_AGENT_MAX) || null,
      details: JSON.stringify(withoutSecrets(entry.details ?? {})),
    };
    await store.insert(row, tx);
    if (tx && webhooks) await webhooks.deliver(tx, row);
  }

  /** The organization's events, newest first (X-ID-AUD-3, X-ID-AUD-4). */
  async function list(organizationId: string, request: AuditListRequest) {
    const position = positionOf(request);
    const filter = {
      organizationId,
      type: request.type,
      userId: request.userId,
      applicationId: request.applicationId,
      since: request.since,
      until: request.until,
    };
    const { items, totalCount, next } = await store.list(filter, position, request.pageSize);
    return { items, totalCount, page: request.page, pageSize: request.pageSize, next: next ? encodeCursor(next) : null };
  }

  return { record, list };
}

export type Audit = ReturnType<typeof createAudit>;

function withoutSecrets(details: AuditDetails): AuditDetails {
  return Object.fromEntries(Object.entries(details).filter(([key]) => !SECRET_KEY.test(key)));
}

/** After the cursor's row, or at a shallow page; a cursor we did not issue or a page too deep is 400 naming the parameter. */
function positionOf({ page, pageSize, cursor }: AuditListRequest): AuditEventPosition {
  if (cursor !== undefined) {
    const after = decodeCursor(cursor);
    if (!after) throw invalidQuery("query.cursor", "is not a cursor from this list: pass a `next` value unchanged");
    return { after };
  }
  if (page * pageSize > MAX_AUDIT_OFFSET_ROWS)
    throw invalidQuery(
      "query.page",
      `page × pageSize must be at most ${MAX_AUDIT_OFFSET_ROWS}: follow \`next\` with \`cursor\` to go deeper`,
    );
  return { page };
}

const invalidQuery = (field: string, message: string) =>
  invalid("validation_failed", "The request does not match the contract.", [{ field, message }]);

/** The cursor is the last row's time and id, base64url: opaque to clients, checked when read back. */
function encodeCursor(key: AuditEventKey): string {
  return Buffer.from(`${key.occurredAt}|${key.id}`).toString("base64url");
}

function decodeCursor(cursor: string): AuditEventKey | undefined {
  const [occurredAt, id, ...rest] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  if (rest.length || !occurredAt || !id) return undefined;
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(occurredAt) || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
  return { occurredAt, id };
}
