/**
 * An organization's users, as its admins manage them (X-ID-UADM-1..9). Accounts are
 * deployment-wide (X-ID-USR-1), so everything here acts on the organization's relation to an
 * account: its applications, its admin role, its block. One organization never reaches another's
 * use of the same account; only an account no other organization has is deleted as a whole.
 * Every change runs in one transaction with the events it records (the outbox rule, ID-EV-1).
 */
import { conflict, notFound } from "../../../../server/domain/errors.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import type { OrganizationUserRow } from "../../storage/organization-users.ts";
import type { AuditEntry, RequestOrigin } from "../audit.ts";
import type { IdentityContext } from "../context.ts";
import { TOTP_KIND } from "../factors/totp-kind.ts";
import type { ResetByAdmin } from "./password-reset.ts";

/** A user as the organization sees them, with the organization's applications they use. */
export interface OrganizationUser {
  row: OrganizationUserRow;
  applications: { id: string; name: string }[];
}

/** Who acts: the admin and the organization their token administers. */
export interface AdminActor {
  organizationId: string;
  userId: string;
  /** Where the admin's call came from, for the audit log. */
  origin?: RequestOrigin | undefined;
}

/**
 * The account-wide mails an admin can ask for, run in the admin action's transaction so the audit
 * event commits with them (password-reset.ts and email-verification.ts own their rules).
 */
export interface AccountMails {
  /** X-ID-RST-7: ends the password, sessions and tokens and mails a reset link; false for an unknown user. */
  forcePasswordResetIn(tx: Tx, userId: string, by?: ResetByAdmin): Promise<boolean>;
  /** X-ID-EVF-6: a new verification link under the resend limits; the address mailed, undefined for an unknown user. */
  resendVerificationIn(tx: Tx, userId: string): Promise<string | undefined>;
}

const noSuchUser = () => notFound("No user of this organization has this id.");
const ownAccount = () => conflict("Admins cannot disable or delete their own account.", "own_account");
const ownAccountReset = () => conflict("Admins cannot force a password reset on their own account.", "own_account");
const accountShared = () =>
  conflict("This account also uses another organization's applications: disable the user here instead.", "account_shared");

export function createOrganizationUsers(ctx: IdentityContext, mails: AccountMails) {
  const { clock, events } = ctx;
  const { transaction, organizationUsers: store, users } = ctx.storage;
  const now = () => clock.now().toISOString();

  /** An admin's change of a user, in the admin's organization (X-ID-AUD-6). */
  const recordChange = (trx: Tx, actor: AdminActor, type: AuditEntry["type"], userId: string, details: AuditEntry["details"] = {}) =>
    ctx.audit.record(trx, {
      type,
      actor: { type: "admin", id: actor.userId },
      userId,
      organizationId: actor.organizationId,
      origin: actor.origin,
      details,
    });

  async function withApplications(organizationId: string, rows: OrganizationUserRow[]): Promise<OrganizationUser[]> {
    const apps = await store.applicationsOf(
      organizationId,
      rows.map((r) => r.id),
    );
    return rows.map((row) => ({ row, applications: apps.filter((a) => a.user_id === row.id).map(({ id, name }) => ({ id, name })) }));
  }

  /** X-ID-UADM-1: one page of the organization's users, newest first, those whose email or name starts with `q`. */
  async function list(organizationId: string, q: string | undefined, page: number, pageSize: number) {
    const prefix = q?.trim().toLowerCase();
    const { rows, totalCount } = await store.list(organizationId, {
      ...(prefix ? { prefix } : {}),
      offset: (page - 1) * pageSize,
      limit: pageSize,
    });
    return { items: await withApplications(organizationId, rows), totalCount };
  }

  /** X-ID-UADM-2: one user of the organization; anyone else is 404, like an unknown id (X-ID-UADM-1). */
  async function get(organizationId: string, userId: string): Promise<OrganizationUser> {
    const row = await store.find(organizationId, userId);
    if (!row) throw noSuchUser();
    const [user] = await withApplications(organizationId, [row]);
    return user as OrganizationUser;
  }

  /** The member in the actor's transaction, refusing the actor's own account where `notSelf`. */
  async function memberFor(actor: AdminActor, userId: string, trx: Tx, notSelf: boolean): Promise<OrganizationUserRow> {
    if (notSelf && userId === actor.userId) throw ownAccount();
    const row = await store.find(actor.organizationId, userId, trx);
    if (!row) throw noSuchUser();
    return row;
  }

  /** `user.updated` with `enabled` to the organization's applications the user uses. */
  async function publishEnabled(trx: Tx, organizationId: string, row: OrganizationUserRow, enabled: boolean): Promise<void> {
    await events.publish(trx, {
      type: "user.updated",
      applicationIds: await store.applicationIdsOf(organizationId, row.id, trx),
      data: { userId: row.id, email: row.email, firstName: row.first_name, lastName: row.last_name, enabled },
    });
  }

  /**
   * X-ID-UADM-3: blocks the user from the organization's applications and ends, at once, their
   * codes and tokens there. The block is written first: a sign-in that checks it after this
   * commits is refused; one that checked before has its code deleted or its grant revoked here.
   */
  async function disable(actor: AdminActor, userId: string): Promise<OrganizationUser> {
    await transaction(async (trx) => {
      const row = await memberFor(actor, userId, trx, true);
      const at = now();
      if (!(await store.block(actor.organizationId, userId, at, trx))) return;
      await store.endAccess(actor.organizationId, userId, at, trx);
      await publishEnabled(trx, actor.organizationId, row, false);
      await recordChange(trx, actor, "user.disabled", userId);
    });
    return get(actor.organizationId, userId);
  }

  /** X-ID-UADM-4: lifts the block; what disabling ended stays ended. */
  async function enable(actor: AdminActor, userId: string): Promise<OrganizationUser> {
    await transaction(async (trx) => {
      const row = await memberFor(actor, userId, trx, false);
      if (!(await store.unblock(actor.organizationId, userId, trx))) return;
      await publishEnabled(trx, actor.organizationId, row, true);
      await recordChange(trx, actor, "user.enabled", userId);
    });
    return get(actor.organizationId, userId);
  }

  /**
   * X-ID-UADM-6: removes the user from the organization, or deletes the account when no other
   * organization has it. `user.deleted` is recorded first, while the application links exist.
   */
  async function remove(actor: AdminActor, userId: string): Promise<void> {
    await transaction(async (trx) => {
      await memberFor(actor, userId, trx, true);
      const at = now();
      if (await store.usedElsewhere(actor.organizationId, userId, trx)) {
        await events.publish(trx, {
          type: "user.deleted",
          applicationIds: await store.applicationIdsOf(actor.organizationId, userId, trx),
          data: { userId, deletedAt: at },
        });
        await store.endAccess(actor.organizationId, userId, at, trx);
        await store.removeFromOrganization(actor.organizationId, userId, trx);
        await recordChange(trx, actor, "user.removed", userId, { accountDeleted: false });
        return;
      }
      // The account is this organization's alone: deleted as the user would delete it (sessions,
      // codes and grants go with it by cascade, X-ID-TOK-5), its event to every application it used.
      await events.publish(trx, {
        type: "user.deleted",
        applicationIds: await ctx.storage.applications.ofUser(userId, trx),
        data: { userId, deletedAt: at },
      });
      // X-ID-LOGOUT-8: the user's sessions end with the account (a cascade): their logout tokens first.
      const logoutTargets = await ctx.logouts.targetsOfUser(userId, trx);
      await users.remove(userId, trx);
      await ctx.logouts.queue(trx, userId, logoutTargets);
      await recordChange(trx, actor, "user.removed", userId, { accountDeleted: true });
    });
  }

  /**
   * X-ID-UADM-7: removes the user's authenticator app and recovery codes, for a user of the
   * organization; `user.updated` (`changedFields: ["secondFactor"]`) to its applications and the
   * audit event, in the removal's transaction. Nothing to remove: no event.
   */
  async function removeSecondFactor(actor: AdminActor, userId: string, origin?: RequestOrigin): Promise<void> {
    await transaction(async (trx) => {
      const row = await memberFor(actor, userId, trx, false);
      if (!(await ctx.storage.factors.removeKindOf(userId, TOTP_KIND, trx))) return;
      const changedFields = ["secondFactor"];
      await events.publish(trx, {
        type: "user.updated",
        applicationIds: await store.applicationIdsOf(actor.organizationId, userId, trx),
        data: { userId, email: row.email, firstName: row.first_name, lastName: row.last_name, changedFields },
      });
      await ctx.audit.record(trx, {
        type: "user.updated",
        actor: { type: "admin", id: actor.userId },
        userId,
        organizationId: actor.organizationId,
        origin,
        details: { changedFields },
      });
    });
  }

  /**
   * X-ID-UADM-8: a forced password reset, for an account that is the organization's alone: the
   * password is the account's, and one organization must not end another's use of it. The
   * membership and the other organizations are read in the reset's transaction. Audited by the
   * reset itself (`user.password_reset_requested` via `admin`, X-ID-AUD-8); `user.updated` to the user's applications is the reset's own (X-ID-RST-5).
   */
  async function forcePasswordReset(actor: AdminActor, userId: string): Promise<void> {
    if (userId === actor.userId) throw ownAccountReset();
    await transaction(async (trx) => {
      await memberFor(actor, userId, trx, false);
      if (await store.usedElsewhere(actor.organizationId, userId, trx)) throw accountShared();
      // The reset records its own audit event, with this admin as its actor (X-ID-AUD-8).
      const by = { adminId: actor.userId, organizationId: actor.organizationId, origin: actor.origin };
      if (!(await mails.forcePasswordResetIn(trx, userId, by))) throw noSuchUser();
    });
  }

  /**
   * X-ID-UADM-9: a new verification link, as the user's own resend (its 409 and 429 included).
   * Nothing of the account changes, so no webhook event; the audit event commits with the mail.
   */
  async function sendVerificationEmail(actor: AdminActor, userId: string): Promise<void> {
    await transaction(async (trx) => {
      await memberFor(actor, userId, trx, false);
      if ((await mails.resendVerificationIn(trx, userId)) === undefined) throw noSuchUser();
      await recordChange(trx, actor, "user.updated", userId, { changedFields: [], action: "verification_email_sent" });
    });
  }

  return {
    list,
    get,
    disable,
    enable,
    remove,
    removeSecondFactor,
    forcePasswordReset,
    sendVerificationEmail,
    /** Whether the user is disabled in the organization of the application (X-ID-UADM-3). */
    blockedFrom: (applicationId: string, userId: string) => store.blockedFrom(applicationId, userId),
  };
}

export type OrganizationUsers = ReturnType<typeof createOrganizationUsers>;
