/**
 * Sending (X-EM-3..7, X-EM-13): the rules a request must meet beyond its schema, the transport of
 * each copy, suppression at submission, idempotency, and the one transaction that stores the
 * message, its copies (the outbox) and their timeline before the 202. A message has the mode of
 * the key that sent it, and only keys of that mode read it (X-EM-27).
 */
import { createHash } from "node:crypto";
import { uuidv7 } from "../../../server/ids.ts";
import { isUniqueViolation } from "../../../server/storage/transaction.ts";
import type { Clock } from "../../../server/clock.ts";
import { conflict, invalid, notFound, refused, type FieldError } from "../../../server/domain/errors.ts";
import { newTrackingToken, newVerpToken } from "../mail/compose.ts";
import type { HtmlPlan } from "../mail/html-plan.ts";
import { transportFor } from "../mail/transport.ts";
import {
  type AttachmentRow,
  type EmailRow,
  IDEMPOTENCY_WINDOW_MS,
  type MessageLinkRow,
  type MessageStore,
  type NewMessage,
  type RecipientRow,
  type TimelineRow,
  type Transport,
} from "../storage/messages.ts";
import { addressKey, domainOf } from "./addresses.ts";
import { attachmentNameProblem } from "./attachments.ts";
import { customHeaderErrors } from "./custom-headers.ts";
import type { EmailPrincipal } from "./api-keys.ts";
import { MAX_TRACKED_LINKS } from "./click-links.ts";
import type { Suppressions } from "./suppressions.ts";

export interface SendInput {
  from: string;
  fromName?: string | undefined;
  to: string[];
  replyTo?: string[] | undefined;
  subject: string;
  text?: string | undefined;
  html?: string | undefined;
  headers?: Record<string, string> | undefined;
  attachments?: Array<{ filename: string; contentType: string; content: string; contentId?: string | undefined }> | undefined;
  tags?: string[] | undefined;
  metadata?: Record<string, string> | undefined;
  tracking?: { opens?: boolean | undefined; clicks?: boolean | undefined } | undefined;
}

export interface TransportSetup {
  /** A relay is configured (`EMAIL_SMTP_URL`). */
  relay: boolean;
  /** The accept-all sink was chosen explicitly (`EMAIL_TRANSPORT=sink`). */
  sink: boolean;
  /** Domains `from` may use for copies that leave the simulator. */
  sendingDomains: ReadonlySet<string>;
}

export const MAX_ATTACHMENT_BYTES = 7 * 1024 * 1024;

const badRequest = (errors: FieldError[]) => invalid("validation_failed", "The request does not match the contract.", errors);

/** The decoded size of standard base64 text, without decoding it. */
const base64Size = (b64: string): number => Math.floor((b64.length * 3) / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);

function checkRequest(input: SendInput): void {
  const errors: FieldError[] = [];
  if (input.text === undefined && input.html === undefined) errors.push({ field: "body.text", message: "text or html is required" });
  const seen = new Set<string>();
  input.to.forEach((address, i) => {
    const key = addressKey(address);
    if (seen.has(key)) errors.push({ field: `body.to[${i}]`, message: "repeats an earlier recipient" });
    seen.add(key);
  });
  if (input.tags && new Set(input.tags).size !== input.tags.length) errors.push({ field: "body.tags", message: "must not repeat a tag" });
  errors.push(...customHeaderErrors(input.headers));
  for (const key of Object.keys(input.metadata ?? {})) {
    if (!/^[A-Za-z0-9_.-]{1,40}$/.test(key))
      errors.push({ field: `body.metadata.${key}`, message: "keys are 1-40 letters, digits, '_', '-' or '.'" });
  }
  // Padded base64 is whole 4-character groups. The schema's pattern checks the alphabet only: a
  // regular expression for the groups overflows V8's backtracking stack on a 9 MiB value.
  (input.attachments ?? []).forEach((a, i) => {
    if (a.content.length % 4 !== 0)
      errors.push({ field: `body.attachments[${i}].content`, message: "must be padded base64 (a multiple of 4 characters)" });
  });
  if (errors.length) throw badRequest(errors);

  let total = 0;
  (input.attachments ?? []).forEach((a, i) => {
    const problem = attachmentNameProblem(a.filename);
    if (problem) {
      const detail = problem.extension
        ? `Attachments of type .${problem.extension} are not allowed.`
        : "This attachment's name disguises its type.";
      throw refused("attachment_not_allowed", detail, [{ field: `body.attachments[${i}].filename`, message: problem.message }]);
    }
    total += base64Size(a.content);
  });
  if (total > MAX_ATTACHMENT_BYTES) {
    throw refused("attachment_not_allowed", "Attachments may total at most 7 MiB after decoding.", [
      { field: "body.attachments", message: `decoded total ${total} bytes exceeds 7340032` },
    ]);
  }
}

/** The body as compared for idempotency: after JSON parsing, before defaults (keys sorted). */
function requestHash(input: SendInput): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return createHash("sha256")
    .update(JSON.stringify(canonical(input)))
    .digest("hex");
}

export function createMessages(deps: {
  clock: Clock;
  queries: MessageStore;
  suppressions: Suppressions;
  transports: TransportSetup;
  trackingBaseUrl: string;
  /** The tracking plan of an HTML body (html-plan.ts), made off the event loop (parse-thread.ts). */
  planHtml(html: string, maxLinks: number): Promise<HtmlPlan>;
  /** Wakes the outbound dispatcher: a message was committed. */
  queued(): void;
}) {
  const { clock, queries, suppressions } = deps;
  const trackingUrl = (kind: "open" | "click", token: string) => `${deps.trackingBaseUrl}/v1/track/${kind}/${token}`;

  /** The new message's rows as stored (the 202 shows them, not what the dispatcher did since), or a replay's message. */
  async function send(
    principal: EmailPrincipal,
    input: SendInput,
    idempotencyKey: string | undefined,
  ): Promise<{ email: EmailRow; replayed: boolean; stored?: NewMessage }> {
    checkRequest(input);
    const hash = idempotencyKey ? requestHash(input) : undefined;
    if (idempotencyKey) {
      const replay = await replayOf(principal.apiKeyId, idempotencyKey, hash!);
      if (replay) return { email: replay, replayed: true };
    }

    const routing = { testKey: principal.test, relayConfigured: deps.transports.relay, sink: deps.transports.sink };
    const transports = input.to.map((address) => transportFor(address, routing));
    const unrouted = transports.flatMap((t, i) => (t === "no_transport" ? [i] : []));
    if (unrouted.length) {
      throw refused(
        "no_transport",
        "No outbound relay is configured for addresses outside simulator.test (set EMAIL_SMTP_URL).",
        unrouted.map((i) => ({ field: `body.to[${i}]`, message: "no transport can take this address" })),
      );
    }
    if (transports.some((t) => t !== "simulator") && !deps.transports.sendingDomains.has(domainOf(input.from))) {
      throw refused("sender_domain_not_allowed", `${domainOf(input.from)} is not a sending domain of this deployment.`, [
        { field: "body.from", message: "domain is not a sending domain" },
      ]);
    }
    // The list of the key's mode (X-EM-27).
    const suppressed = await suppressions.among(principal.test, input.to);
    if (input.to.every((a) => suppressed.has(addressKey(a)))) {
      throw refused(
        "recipient_suppressed",
        "Every recipient is on the suppression list.",
        input.to.map((a, i) => ({ field: `body.to[${i}]`, message: `suppressed (${suppressed.get(addressKey(a))!.reason})` })),
      );
    }

    const trackOpens = Boolean(input.tracking?.opens) && input.html !== undefined;
    const trackClicks = Boolean(input.tracking?.clicks) && input.html !== undefined;
    // The tracked destinations, stored once for every copy (X-EM-28); each copy's click tokens are
    // signed from its id and their numbers when it is composed.
    const plan = trackClicks ? await deps.planHtml(input.html!, MAX_TRACKED_LINKS) : undefined;
    const nowMs = clock.now().getTime();
    const now = new Date(nowMs).toISOString();
    // Time-ordered ids: a message, its copies and its events are appended to their B-trees, and the
    // retention purge deletes the oldest from whole pages at their start (server/ids.ts).
    const emailId = uuidv7(nowMs);
    const initialStatuses = input.to.map((a) => (suppressed.has(addressKey(a)) ? ("Suppressed" as const) : ("Queued" as const)));
    const email: EmailRow = {
      id: emailId,
      api_key_id: principal.apiKeyId,
      from_address: input.from,
      from_name: input.fromName ?? null,
      subject: input.subject,
      text: input.text ?? null,
      html: input.html ?? null,
      reply_to: JSON.stringify(input.replyTo ?? []),
      headers: JSON.stringify(input.headers ?? {}),
      tags: JSON.stringify(input.tags ?? []),
      metadata: JSON.stringify(input.metadata ?? {}),
      track_opens: trackOpens,
      track_clicks: trackClicks,
      test_mode: principal.test,
      status: initialStatuses.includes("Queued") ? "Queued" : "Suppressed",
      created_at: now,
      updated_at: now,
    };
    const attachments: AttachmentRow[] = (input.attachments ?? []).map((a, i) => ({
      email_id: emailId,
      position: i,
      size: base64Size(a.content),
      filename: a.filename,
      content_type: a.contentType,
      content_id: a.contentId ?? null,
      content: a.content,
    }));
    const recipients: RecipientRow[] = [];
    const links: MessageLinkRow[] = (plan?.urls ?? []).map((url, position) => ({ email_id: emailId, position, url }));
    const timeline: TimelineRow[] = [];
    const fromDomain = domainOf(input.from);
    input.to.forEach((address, i) => {
      const id = uuidv7(nowMs);
      const entry = suppressed.get(addressKey(address));
      recipients.push({
        id,
        email_id: emailId,
        position: i,
        address,
        address_key: addressKey(address),
        status: initialStatuses[i]!,
        transport: transports[i] as Transport,
        message_id: `<${newVerpToken()}@${fromDomain}>`,
        return_token: newVerpToken(),
        open_token: newTrackingToken(),
        bounce_type: null,
        error_message: entry ? `The recipient is on the suppression list (${entry.reason}).` : null,
        smtp_response: null,
        smtp_status: null,
        attempts: 0,
        next_attempt_at: entry ? null : now,
        lease_token: null,
        lease_expires_at: null,
        opened_at: null,
        clicked_at: null,
        updated_at: now,
      });
      timeline.push({ id: uuidv7(nowMs), email_id: emailId, recipient_id: id, type: "email.queued", data: "{}", created_at: now });
      if (entry)
        timeline.push({
          id: uuidv7(nowMs),
          email_id: emailId,
          recipient_id: id,
          type: "email.suppressed",
          data: JSON.stringify({ errorMessage: `The recipient is on the suppression list (${entry.reason}).` }),
          created_at: now,
        });
    });

    try {
      await queries.storeMessage(
        { email, attachments, recipients, links, timeline },
        idempotencyKey
          ? {
              row: { api_key_id: principal.apiKeyId, key: idempotencyKey, request_hash: hash!, email_id: emailId, created_at: now },
              expiredBefore: new Date(clock.now().getTime() - IDEMPOTENCY_WINDOW_MS).toISOString(),
            }
          : undefined,
      );
      deps.queued();
    } catch (err) {
      // Another request took the key between our check and our COMMIT.
      if (idempotencyKey && isUniqueViolation(err)) {
        const replay = await replayOf(principal.apiKeyId, idempotencyKey, hash!);
        if (replay) return { email: replay, replayed: true };
        throw conflict("A request with this Idempotency-Key is still in progress.", "idempotency_key_in_use");
      }
      throw err;
    }
    return { email, replayed: false, stored: { email, attachments, recipients, links, timeline } };
  }

  /**
   * The earlier message of an Idempotency-Key this API key used within 24 hours with the same body;
   * 422 with another body. Another API key's use of the same value is not this key's (X-EM-4), as
   * Stripe scopes keys to an account and mode: a test send never makes a live one a replay.
   */
  async function replayOf(apiKeyId: string, key: string, hash: string): Promise<EmailRow | undefined> {
    const entry = await queries.findIdempotencyKey(apiKeyId, key);
    if (!entry || entry.created_at < new Date(clock.now().getTime() - IDEMPOTENCY_WINDOW_MS).toISOString()) return undefined;
    if (entry.request_hash !== hash)
      throw refused("idempotency_key_reused", "This Idempotency-Key was used in the last 24 hours with a different request body.");
    return queries.findEmail(entry.email_id);
  }

  /** A message of the caller's mode (`test`: a test key); another mode's is 404 like an id never issued (X-EM-27). */
  async function get(id: string, test: boolean): Promise<EmailRow> {
    const email = await queries.findEmail(id);
    if (!email || Boolean(email.test_mode) !== test) throw notFound("No email with this id.");
    return email;
  }

  /** A message with its copies, their timeline and its attachments, as stored now. */
  async function recordOf(email: EmailRow): Promise<MessageRecord> {
    const [recipients, timeline, attachments] = await Promise.all([
      queries.recipientsOf(email.id),
      queries.timelineOf(email.id),
      queries.attachmentsOf(email.id),
    ]);
    return { email, recipients, timeline, attachments };
  }

  /** A message of the caller's mode, whole (X-EM-27). */
  const read = async (id: string, test: boolean): Promise<MessageRecord> => recordOf(await get(id, test));

  /** A page of the caller's mode's messages, newest first, each whole. */
  async function list(filter: MessageFilter, page: number, pageSize: number): Promise<{ items: MessageRecord[]; totalCount: number }> {
    const { items, totalCount } = await queries.listEmails(filter, page, pageSize);
    return { items: await Promise.all(items.map(recordOf)), totalCount };
  }

  /** One recipient's copy of a message of the caller's mode; 404 when the address is not one of its recipients. */
  async function copyOf(id: string, test: boolean, address: string): Promise<{ email: EmailRow; copy: RecipientRow }> {
    const email = await get(id, test);
    const copy = (await queries.recipientsOf(email.id)).find((r) => r.address_key === addressKey(address));
    if (!copy) throw notFound("This address is not a recipient of this email.");
    return { email, copy };
  }

  return { send, get, read, list, recordOf, copyOf, trackingUrl };
}

/** A message as the API shows it: the message, its copies, their timeline and its attachments. */
export interface MessageRecord {
  email: EmailRow;
  recipients: RecipientRow[];
  timeline: TimelineRow[];
  attachments: AttachmentRow[];
}

/** Which messages a list shows: the caller's mode's (X-EM-27), optionally of one status or tag. */
export interface MessageFilter {
  testMode: boolean;
  status?: string | undefined;
  tag?: string | undefined;
}

export type Messages = ReturnType<typeof createMessages>;
