/**
 * Password reset (X-ID-RST-1..7): asking for a link, the link's page, setting the new password,
 * and the administrators' links. The rules are stated in spec/identity/password-reset.tsp.
 *
 * Invariants:
 * - a request does the same visible work whether or not the address has an account (X-ID-RST-1):
 *   one transaction that counts the limits and writes one row with a fresh token's hash; only the
 *   mail differs, queued in that same transaction;
 * - a token is stored only as its SHA-256 and is spent by one conditional update, so of concurrent
 *   submissions exactly one changes the password (X-ID-RST-3);
 * - the new password, the end of every session, grant, code and open link, the forgotten sign-in
 *   failures and `user.updated` commit together or not at all (X-ID-RST-5);
 * - a link written for an account and a password set through one are audit events of the same
 *   transaction (X-ID-AUD-8); a request for an address with no account records nothing.
 */
import { randomUUID } from "node:crypto";
import { invalid } from "../../../../server/domain/errors.ts";
import type { Clock } from "../../../../server/clock.ts";
import { hashPassword } from "../../../../server/security/passwords.ts";
import { addressBucket, throttleKeys } from "../../../../server/security/sign-in-throttle.ts";
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import type { PasswordResetRow, UserRow } from "../../storage/schema.ts";
import type { IdentityStorage } from "../../storage/index.ts";
import { type Audit, type AuditActor, createAudit, type RequestOrigin } from "../audit.ts";
import type { IdentityContext } from "../context.ts";

/** How long a reset link works (X-ID-RST-3). */
export const RESET_LINK_MINUTES = 15;
/** Requests per email address per hour, known or not (X-ID-RST-6). */
export const RESETS_PER_EMAIL_PER_HOUR = 5;
/** Requests per client address (IPv6 by /64) per hour (X-ID-RST-6). */
export const RESETS_PER_ADDRESS_PER_HOUR = 20;
/** Sign-up's rule for a password (spec: SignupForm.password), which the new password follows (X-ID-RST-4). */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

const HOUR_MS = 3600_000;
const LINK_MS = RESET_LINK_MINUTES * 60_000;

/** Where a request of a reset link came from: the address typed, the client, and the sign-in it interrupted. */
export interface ResetRequest {
  email: string;
  clientAddress: string;
  /** The application of the authorization request the user came from: the mail's and pages' branding. */
  applicationId?: string;
  /** That request's sign-in (a path on this server), where the user goes back after the reset. */
  returnTo?: string;
  /** The request's client, for the audit log (X-ID-AUD-8). */
  origin?: RequestOrigin;
}

/** The admin behind a forced reset, for the audit log (X-ID-AUD-8): who, in which organization, from where. */
export interface ResetByAdmin {
  adminId: string;
  organizationId: string;
  origin?: RequestOrigin | undefined;
}

/** The mail a request sends, by what the address belongs to (X-ID-RST-2). */
type Recipient = { kind: "none" } | { kind: "link"; user: UserRow } | { kind: "notice"; user: UserRow };

/** What the stores need to issue a link; the admin command has these without a running service. */
export interface LinkIssuer {
  storage: Pick<IdentityStorage, "transaction" | "users" | "passwordResets" | "auditEvents" | "applications">;
  clock: Clock;
  issuer: string;
}

/** The link of a token: `{issuer}/reset-password?token=…`. */
export const resetLinkOf = (issuer: string, token: string) => `${issuer}/reset-password?token=${encodeURIComponent(token)}`;

/** The email key the limits count by: the SHA-256 of the address as typed, lower-cased (never the address itself). */
const emailKeyOf = (email: string) => sha256Hex(email.trim().toLowerCase());

/**
 * Writes a new link's row in `tx` and ends the user's earlier links (only the newest works,
 * X-ID-RST-3). `user` null: the row of an address with nothing to reset, which no token spends.
 * Returns the token (its hash is what is stored) and the link.
 */
async function writeLink(
  deps: LinkIssuer,
  tx: Tx,
  o: { user: UserRow | null; emailKey: string; clientAddress: string; applicationId?: string; returnTo?: string },
): Promise<{ token: string; link: string; row: PasswordResetRow }> {
  const token = randomSecret(32);
  const now = deps.clock.now();
  if (o.user) await deps.storage.passwordResets.endOpen(o.user.id, now.toISOString(), tx);
  const row: PasswordResetRow = {
    id: randomUUID(),
    token_hash: sha256Hex(token),
    user_id: o.user?.id ?? null,
    email_key: o.emailKey,
    client_address: o.clientAddress,
    application_id: o.applicationId ?? null,
    return_to: o.returnTo ?? null,
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + LINK_MS).toISOString(),
    used_at: null,
    ended_at: null,
  };
  await deps.storage.passwordResets.insert(row, tx);
  return { token, link: resetLinkOf(deps.issuer, token), row };
}

/** The audit event of a link written for `user` (X-ID-AUD-8): never the link or its token. */
const linkIssued = (
  userId: string,
  actor: AuditActor,
  via: "email" | "admin" | "admin_command",
  more: { applicationId?: string | undefined; organizationId?: string | undefined; origin?: RequestOrigin | undefined } = {},
) => ({ type: "user.password_reset_requested" as const, actor, userId, ...more, details: { via } });

/**
 * A reset link for the account of `email`, made by an administrator (X-ID-RST-7: the admin
 * command prints it; no mail is sent). Undefined when no account has the address. The operator
 * at the console is the audit event's `system` actor, of no organization (X-ID-AUD-8).
 */
export async function issueResetLink(deps: LinkIssuer, email: string): Promise<{ link: string; expiresAt: string } | undefined> {
  // The command runs without the service: its audit log writes the row alone (no webhook delivery: not a webhook event).
  const audit: Audit = createAudit({ store: deps.storage.auditEvents, applications: deps.storage.applications, clock: deps.clock });
  return deps.storage.transaction(async (tx) => {
    const user = await deps.storage.users.findByEmail(email, tx);
    if (!user) return undefined;
    const { link, row } = await writeLink(deps, tx, { user, emailKey: emailKeyOf(user.email), clientAddress: "admin" });
    await audit.record(tx, linkIssued(user.id, { type: "system" }, "admin_command"));
    return { link, expiresAt: row.expires_at };
  });
}

export function createPasswordResets(ctx: IdentityContext) {
  const { clock, storage, events } = ctx;
  const { transaction, users, passwordResets, sessions, grants, applications, signInThrottle } = storage;
  const nowIso = () => clock.now().toISOString();

  /** Whom a request writes to: an account with a password, or with no way in at all, gets the link; a social-only one a notice. */
  async function recipientOf(email: string, tx: Tx): Promise<Recipient> {
    const user = await users.findByEmail(email, tx);
    if (!user) return { kind: "none" };
    if (user.password_hash) return { kind: "link", user };
    return (await users.hasLinkedIdentity(user.id, tx)) ? { kind: "notice", user } : { kind: "link", user };
  }

  /**
   * A request of a reset link (X-ID-RST-1, X-ID-RST-2, X-ID-RST-6). Resolves the same way for every
   * address; over a limit it writes and sends nothing.
   */
  async function requestReset(request: ResetRequest): Promise<void> {
    const emailKey = emailKeyOf(request.email);
    const clientAddress = addressBucket(request.clientAddress);
    await transaction(async (tx) => {
      const since = new Date(clock.now().getTime() - HOUR_MS).toISOString();
      const counts = await passwordResets.countSince({ emailKey, clientAddress, since }, tx);
      if (counts.byEmail >= RESETS_PER_EMAIL_PER_HOUR || counts.byAddress >= RESETS_PER_ADDRESS_PER_HOUR) return;
      const recipient = await recipientOf(request.email, tx);
      const applicationId = request.applicationId ? { applicationId: request.applicationId } : {};
      const { link } = await writeLink(ctx, tx, {
        user: recipient.kind === "link" ? recipient.user : null,
        emailKey,
        clientAddress,
        ...applicationId,
        ...(request.returnTo ? { returnTo: request.returnTo } : {}),
      });
      if (recipient.kind !== "none") {
        // The requester proved nothing: the application is named only if the account has used it,
        // so an admin learns nothing of accounts outside the organization (X-ID-AUD-3, X-ID-AUD-8).
        const used = request.applicationId && (await applications.ofUser(recipient.user.id, tx)).includes(request.applicationId);
        await ctx.audit.record(
          tx,
          linkIssued(recipient.user.id, { type: "user" }, "email", {
            ...(used ? { applicationId: request.applicationId } : {}),
            origin: request.origin,
          }),
        );
      }
      if (recipient.kind === "link") {
        await ctx.mail.queue(tx, {
          to: recipient.user.email,
          template: "password-reset",
          ...applicationId,
          values: { link, expiresMinutes: RESET_LINK_MINUTES },
        });
      } else if (recipient.kind === "notice") {
        await ctx.mail.queue(tx, { to: recipient.user.email, template: "password-reset-social", ...applicationId, values: {} });
      }
    });
  }

  /** The link's row and its account while the token is usable (the page's form; opening it spends nothing). */
  async function findUsableLink(token: string): Promise<{ reset: PasswordResetRow; user: UserRow } | undefined> {
    const reset = await passwordResets.findUsable(sha256Hex(token), nowIso());
    const user = reset?.user_id ? await users.findById(reset.user_id) : undefined;
    return reset && user ? { reset, user } : undefined;
  }

  /**
   * Ends what the user's old password let anyone keep (X-ID-RST-5), in `tx`: every session, grant,
   * unexchanged code and open link, and the account's sign-in failures across addresses; then
   * `user.updated` to every application of the user.
   */
  async function endEverything(tx: Tx, user: UserRow, update: Partial<UserRow>, at: string): Promise<void> {
    await users.update(user.id, update, tx);
    await passwordResets.endOpen(user.id, at, tx);
    // X-ID-LOGOUT-8: the sessions' applications are read before the sessions go (they go with them).
    const logoutTargets = await ctx.logouts.targetsOfUser(user.id, tx);
    await sessions.removeAllOfUser(user.id, tx);
    await ctx.logouts.queue(tx, user.id, logoutTargets);
    await grants.revokeAllOfUser(user.id, at, tx);
    await signInThrottle.forgetAccount(throttleKeys(user.email, "").account, tx);
    await events.publish(tx, {
      type: "user.updated",
      applicationIds: await applications.ofUser(user.id, tx),
      data: { userId: user.id, email: user.email, firstName: user.first_name, lastName: user.last_name, changedFields: ["password"] },
    });
  }

  /**
   * Sets the new password through a reset link (X-ID-RST-3..5). A password that breaks sign-up's
   * rule is 400 `invalid_password` and spends nothing; undefined when the link is not usable
   * (unknown, used, ended, expired, or spent by a concurrent submission). Returns the spent link.
   */
  async function resetPassword(token: string, password: string, origin?: RequestOrigin): Promise<PasswordResetRow | undefined> {
    if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH || password.includes("\u0000")) {
      throw invalid("invalid_password", `Password: ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`, [
        { field: "body.password", message: `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters` },
      ]);
    }
    // Hashed before the transaction: scrypt takes tens of milliseconds, and no lock should wait on it.
    const passwordHash = await hashPassword(password);
    return transaction(async (tx) => {
      const at = nowIso();
      const reset = await passwordResets.spend(sha256Hex(token), at, tx);
      const user = reset?.user_id ? await users.findById(reset.user_id, tx) : undefined;
      if (!reset || !user) return undefined;
      await endEverything(tx, user, { password_hash: passwordHash, updated_at: at }, at);
      // The link proved the mailbox: the user is the actor. Its application (the sign-in the request
      // interrupted) is named on the request's terms: only one the account has used (X-ID-AUD-8).
      const used = reset.application_id && (await applications.ofUser(user.id, tx)).includes(reset.application_id);
      await ctx.audit.record(tx, {
        type: "user.password_reset",
        actor: { type: "user", id: user.id },
        userId: user.id,
        applicationId: used ? (reset.application_id ?? undefined) : undefined,
        origin,
      });
      return reset;
    });
  }

  /** A link spent within the last link lifetime, for the page that follows the reset (X-ID-RST-5). */
  async function findCompletedReset(id: string): Promise<PasswordResetRow | undefined> {
    const reset = await passwordResets.findById(id);
    if (!reset?.used_at || Date.parse(reset.used_at) + LINK_MS < clock.now().getTime()) return undefined;
    return reset;
  }

  /**
   * An administrator's forced reset (X-ID-RST-7), for the admin API: the current password stops
   * working, every session, grant, code and older link ends (as X-ID-RST-5), and the user is mailed
   * a new link. False when the user does not exist. `by`: the admin, recorded as the audit
   * event's actor in their organization (X-ID-AUD-8); without one the service is the actor.
   */
  async function forcePasswordReset(userId: string, by?: ResetByAdmin): Promise<boolean> {
    return transaction((tx) => forcePasswordResetIn(tx, userId, by));
  }

  /** The forced reset in the caller's transaction, for a caller that records more with it (the admin API's audit event). */
  async function forcePasswordResetIn(tx: Tx, userId: string, by?: ResetByAdmin): Promise<boolean> {
    const user = await users.findById(userId, tx);
    if (!user) return false;
    const at = nowIso();
    await endEverything(tx, user, { password_hash: null, updated_at: at }, at);
    const { link } = await writeLink(ctx, tx, { user, emailKey: emailKeyOf(user.email), clientAddress: "admin" });
    await ctx.mail.queue(tx, { to: user.email, template: "password-reset", values: { link, expiresMinutes: RESET_LINK_MINUTES } });
    const actor: AuditActor = by ? { type: "admin", id: by.adminId } : { type: "system" };
    await ctx.audit.record(tx, linkIssued(user.id, actor, "admin", by ? { organizationId: by.organizationId, origin: by.origin } : {}));
    return true;
  }

  return { requestReset, findUsableLink, resetPassword, findCompletedReset, forcePasswordReset, forcePasswordResetIn };
}

export type PasswordResets = ReturnType<typeof createPasswordResets>;
