/**
 * Email verification (X-ID-EVF-1..7): proving that a user receives mail at an address, for the
 * address they signed up with and for a new address they change to.
 *
 * A link carries 256 random bits; only their SHA-256 is stored (X-ID-EVF-2). It works once and for
 * `EMAIL_VERIFICATION_TTL_SECONDS`; using it is one conditional update, so of two concurrent uses
 * exactly one verifies. A change of address takes effect only when the new address is verified:
 * until then the account keeps its old address, and the new one is pending (X-ID-EVF-3). Every
 * change of the account's address or of its verified state publishes `user.updated` in the same
 * transaction (X-ID-EVF-7), and records its audit event there too (X-ID-AUD-8).
 */
import { conflict, invalid, rateLimited } from "../../../../server/domain/errors.ts";
import { isUniqueViolation, type Tx } from "../../../../server/storage/transaction.ts";
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { EmailVerificationRow, UserRow } from "../../storage/schema.ts";
import type { RequestOrigin } from "../audit.ts";
import type { IdentityContext } from "../context.ts";

/** How long a verification link works: a day, as Auth0 and Kratos let an emailed link live for hours, not minutes. */
/** Whole hours: the mail states it as `{{expiresHours}}` hours. */
export const EMAIL_VERIFICATION_TTL_SECONDS = 24 * 3600;
/** Resend limits per account and address (X-ID-EVF-6): one mail a minute, five an hour. */
export const VERIFICATION_MAIL_INTERVAL_SECONDS = 60;
export const VERIFICATION_MAILS_PER_HOUR = 5;
const HOUR_MS = 3600_000;

/** The hosted page a link opens; its token is the only parameter. */
export const CONFIRM_PATH = "/verify-email/confirm";

export interface VerificationMailOptions {
  /** The application the user was signing in to: its name and branding frame the mail. */
  applicationId?: string | undefined;
  /** A path on this server (the authorization that stopped for it) the confirmation page continues to. */
  returnTo?: string | undefined;
}

/** What a used link did. */
export interface VerifiedEmail {
  user: UserRow;
  /** True when the account's address changed to the verified one. */
  changed: boolean;
  applicationId: string | null;
  returnTo: string | null;
}

export const emailAlreadyVerified = () => conflict("This email address is verified already.", "email_already_verified");
const linkUnusable = () => invalid("verification_link_invalid", "This verification link is unknown, used or expired. Ask for a new one.");

export function createEmailVerification(ctx: IdentityContext) {
  const { clock, events, issuer } = ctx;
  const { transaction, users, applications, emailVerifications } = ctx.storage;
  const nowIso = () => clock.now().toISOString();

  /**
   * Stores a new link for `email` and queues its mail, in the caller's transaction: the mail is
   * sent only if the change that asked for it commits (X-ID-MAIL-1).
   */
  async function queueLink(
    tx: Tx,
    user: Pick<UserRow, "id">,
    email: string,
    purpose: EmailVerificationRow["purpose"],
    options: VerificationMailOptions,
  ): Promise<void> {
    const now = clock.now();
    const token = randomSecret(32);
    await emailVerifications.insert(
      {
        token_hash: sha256Hex(token),
        user_id: user.id,
        email,
        purpose,
        application_id: options.applicationId ?? null,
        return_to: options.returnTo ?? null,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + EMAIL_VERIFICATION_TTL_SECONDS * 1000).toISOString(),
        consumed_at: null,
      },
      tx,
    );
    await ctx.mail.queue(tx, {
      to: email,
      template: "email-verification",
      ...(options.applicationId ? { applicationId: options.applicationId } : {}),
      values: {
        link: `${issuer}${CONFIRM_PATH}?token=${encodeURIComponent(token)}`,
        email,
        expiresHours: EMAIL_VERIFICATION_TTL_SECONDS / 3600,
      },
    });
  }

  /** X-ID-EVF-6: refuses a mail to `email` for this user sooner than the limits allow (429 with Retry-After). */
  async function checkMailRate(userId: string, email: string, tx?: Tx): Promise<void> {
    const now = clock.now().getTime();
    const sent = await emailVerifications.sentSince(userId, email, new Date(now - HOUR_MS).toISOString(), tx);
    let retryAfterMs = 0;
    if (sent.newest) retryAfterMs = Date.parse(sent.newest) + VERIFICATION_MAIL_INTERVAL_SECONDS * 1000 - now;
    if (sent.count >= VERIFICATION_MAILS_PER_HOUR && sent.oldest) {
      retryAfterMs = Math.max(retryAfterMs, Date.parse(sent.oldest) + HOUR_MS - now);
    }
    if (retryAfterMs > 0) {
      const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
      throw rateLimited(`A verification email was sent recently. Try again in ${retryAfter} seconds.`, retryAfter);
    }
  }

  /**
   * Sends the user a new verification link (X-ID-EVF-6): for the pending new address when an email
   * change waits, else for the account's address. The hosted page's "send it again" and the admin
   * API's "resend verification" call this. 409 `email_already_verified` when there is nothing to
   * verify, 429 within the limits, `undefined` when the user does not exist. Resolves with the
   * address the mail went to.
   */
  async function resendVerification(userId: string, options: VerificationMailOptions = {}): Promise<string | undefined> {
    return transaction((tx) => resendVerificationIn(tx, userId, options));
  }

  /** The resend in the caller's transaction, for a caller that records more with it (the admin API's audit event). */
  async function resendVerificationIn(tx: Tx, userId: string, options: VerificationMailOptions = {}): Promise<string | undefined> {
    const user = await users.findById(userId, tx);
    if (!user) return undefined;
    const pending = await emailVerifications.newestLive(userId, "change", nowIso(), tx);
    const purpose = pending ? "change" : "address";
    const email = pending?.email ?? user.email;
    if (!pending && user.email_verified) throw emailAlreadyVerified();
    await checkMailRate(userId, email, tx);
    // A change's mail keeps where its first link led (the application that framed it).
    await queueLink(tx, user, email, purpose, {
      applicationId: options.applicationId ?? pending?.application_id ?? undefined,
      returnTo: options.returnTo,
    });
    return email;
  }

  /**
   * Asks to change the user's address to `newEmail` (X-ID-EVF-3): the account keeps its address
   * and `newEmail` is pending until its link is used; a link of an earlier change stops working.
   * 409 `email_taken` when another account has the address. The same address as now: nothing to do.
   */
  async function requestEmailChange(
    userId: string,
    newEmail: string,
    options: VerificationMailOptions = {},
    origin?: RequestOrigin,
  ): Promise<UserRow | undefined> {
    const email = newEmail.toLowerCase();
    return transaction(async (tx) => {
      const user = await users.findById(userId, tx);
      if (!user) return undefined;
      if (email === user.email) {
        await emailVerifications.supersede(userId, "change", nowIso(), tx);
        return user;
      }
      const holder = await users.findByEmail(email, tx);
      if (holder) throw conflict("An account with this email address already exists.", "email_taken");
      await checkMailRate(userId, email, tx);
      await emailVerifications.supersede(userId, "change", nowIso(), tx);
      await queueLink(tx, user, email, "change", options);
      // X-ID-AUD-8: never the address itself; the account's fields are the admin API's to show.
      await ctx.audit.record(tx, {
        type: "user.email_change_requested",
        actor: { type: "user", id: user.id },
        userId: user.id,
        applicationId: options.applicationId,
        origin,
      });
      return user;
    });
  }

  /** The address an email change waits to verify, if any (shown as the user's `pendingEmail`). */
  async function pendingEmailOf(userId: string): Promise<string | undefined> {
    return (await emailVerifications.newestLive(userId, "change", nowIso()))?.email;
  }

  /**
   * Uses a link (X-ID-EVF-2..4, X-ID-EVF-7). One conditional update consumes it; then the account's
   * address is verified, or changed to the new address and verified, and `user.updated` is
   * published, all in one transaction. Refused, with nothing written: an unknown, used, superseded
   * or expired link (400 `verification_link_invalid`), a link for an address the account no longer
   * has, and a new address another account took meanwhile (409 `email_taken`).
   */
  async function confirmEmail(token: string, origin?: RequestOrigin): Promise<VerifiedEmail> {
    if (token.length < 16 || token.length > 128) throw linkUnusable();
    try {
      return await transaction(async (tx) => {
        const now = nowIso();
        const link = await emailVerifications.consume(sha256Hex(token), now, tx);
        if (!link) throw linkUnusable();
        const user = await users.findById(link.user_id, tx);
        if (!user) throw linkUnusable();
        const changed = link.purpose === "change" && link.email !== user.email;
        // A link for the account's former address proves nothing about the current one.
        if (link.purpose === "address" && link.email !== user.email) throw linkUnusable();
        if (changed) {
          const holder = await users.findByEmail(link.email, tx);
          if (holder && holder.id !== user.id) throw conflict("Another account has taken this email address.", "email_taken");
        } else if (user.email_verified) {
          return { user, changed: false, applicationId: link.application_id, returnTo: link.return_to };
        }
        const update: Partial<UserRow> = { email: link.email, email_verified: true, updated_at: now };
        await users.update(user.id, update, tx);
        // The account's other links name an address that is no longer pending or already proven.
        if (changed) await emailVerifications.supersede(user.id, "address", now, tx);
        const updated = { ...user, ...update };
        await events.publish(tx, {
          type: "user.updated",
          applicationIds: await applications.ofUser(user.id, tx),
          data: {
            userId: user.id,
            email: updated.email,
            firstName: updated.first_name,
            lastName: updated.last_name,
            emailVerified: true,
            changedFields: changed ? ["email", "emailVerified"] : ["emailVerified"],
          },
        });
        // X-ID-AUD-8: the link proved the mailbox, so the user is the actor; the link's application framed it.
        await ctx.audit.record(tx, {
          type: changed ? "user.email_changed" : "user.email_verified",
          actor: { type: "user", id: user.id },
          userId: user.id,
          applicationId: link.application_id ?? undefined,
          origin,
        });
        return { user: updated, changed, applicationId: link.application_id, returnTo: link.return_to };
      });
    } catch (err) {
      // The unique index decides a race with a registration or another change to the same address.
      if (isUniqueViolation(err)) throw conflict("Another account has taken this email address.", "email_taken");
      throw err;
    }
  }

  return { queueLink, resendVerification, resendVerificationIn, requestEmailChange, pendingEmailOf, confirmEmail };
}

export type EmailVerification = ReturnType<typeof createEmailVerification>;
