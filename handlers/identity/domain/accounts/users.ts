/**
 * Users (X-ID-USR-1): deployment-wide accounts. Every change records its user event in the same
 * transaction as the change (the outbox rule, ID-EV-1): `user.created` to the application the user
 * registered through, `user.updated` and `user.deleted` to every application the user is a user of.
 */
import { randomUUID } from "node:crypto";
import { isUniqueViolation, type Tx } from "../../../../server/storage/transaction.ts";
import { conflict, invalid, rateLimited } from "../../../../server/domain/errors.ts";
import { DUMMY_HASH, hashPassword, verifyPassword as verifyPasswordHash } from "../../../../server/security/passwords.ts";
import { addressBucket } from "../../../../server/security/sign-in-throttle.ts";
import type { UserRow } from "../../storage/schema.ts";
import type { RequestOrigin } from "../audit.ts";
import type { IdentityContext } from "../context.ts";
import type { EmailVerification } from "./email-verification.ts";

/** Registrations per client address per hour on `POST /api/users` (documented in spec/identity/users.tsp). */
export const REGISTRATIONS_PER_ADDRESS_PER_HOUR = 20;
const HOUR_MS = 3600_000;

export interface RegistrationInput {
  clientId?: string;
  email: string;
  password?: string;
  firstName: string;
  lastName: string;
  emailVerified?: boolean;
  /** The authorization the sign-up belongs to: where the verification mail's page continues (X-ID-EVF-1). */
  returnTo?: string;
}

export interface SocialProfile {
  provider: string;
  subject: string;
  email: string;
  emailVerified: boolean;
  firstName: string;
  lastName: string;
  clientId?: string;
}

/** What an upstream sign-in found (X-ID-SOC-1): a user to sign in, or an account with its email that it may not enter without proof. */
export type SocialUserOutcome = { outcome: "signed-in"; user: UserRow; created: boolean } | { outcome: "unlinked-account"; user: UserRow };

export const emailTaken = () => conflict("An account with this email address already exists.", "email_taken");

/** `verification` mails the link that proves a new account's address (X-ID-EVF-1). */
export function createUsers(ctx: IdentityContext, verification: Pick<EmailVerification, "queueLink">) {
  const { clock, events, audit } = ctx;
  const { transaction, users, applications, registrationAttempts } = ctx.storage;
  const now = () => clock.now().toISOString();

  async function applicationIdOf(clientId: string | undefined, trx?: Tx): Promise<string | undefined> {
    if (clientId === undefined) return undefined;
    const app = await applications.findByClientId(clientId, trx);
    // A disabled application is refused like an unknown one (X-ID-TOK-5).
    if (!app?.enabled) {
      throw invalid("unknown_client", "No application has this client id.", [{ field: "body.clientId", message: "unknown client id" }]);
    }
    return app.id;
  }

  /** Inserts the user, links it to its application, publishes `user.created` and records it (X-ID-AUD-2), in the caller's transaction. */
  async function insertWithEvent(trx: Tx, row: UserRow, applicationId: string | undefined, origin?: RequestOrigin): Promise<void> {
    await users.insert(row, trx);
    if (applicationId) await applications.addUser(applicationId, row.id, row.created_at, trx);
    await events.publish(trx, {
      type: "user.created",
      applicationIds: applicationId ? [applicationId] : [],
      data: { userId: row.id, email: row.email, firstName: row.first_name, lastName: row.last_name },
    });
    await audit.record(trx, {
      type: "user.created",
      actor: { type: "user", id: row.id },
      userId: row.id,
      applicationId,
      origin,
      details: { method: row.password_hash === null ? "social" : "password" },
    });
  }

  /**
   * Creates a user (scrypt hash when a password is given) through the application of `clientId`
   * and publishes `user.created`, all in one transaction. A registered email is 409 `email_taken`,
   * also when two registrations race (the unique index decides).
   */
  async function registerUser(input: RegistrationInput, origin?: RequestOrigin): Promise<UserRow> {
    const applicationId = await applicationIdOf(input.clientId);
    if (await users.findByEmail(input.email)) throw emailTaken();
    const at = now();
    const row: UserRow = {
      id: randomUUID(),
      email: input.email.toLowerCase(),
      password_hash: input.password !== undefined ? await hashPassword(input.password) : null,
      first_name: input.firstName,
      last_name: input.lastName,
      email_verified: input.emailVerified ?? false,
      created_at: at,
      updated_at: at,
    };
    try {
      await transaction(async (trx) => {
        await insertWithEvent(trx, row, applicationId, origin);
        // X-ID-EVF-1: an address nobody vouched for is mailed its link with the account, or not at all.
        if (!row.email_verified) await verification.queueLink(trx, row, row.email, "address", { applicationId, returnTo: input.returnTo });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
    return row;
  }

  /**
   * The unauthenticated registration endpoint's limit: at most 20 attempts per client address per
   * hour, counted in the database so every instance agrees. Throws 429 with Retry-After.
   */
  async function checkRegistrationRate(clientAddress: string): Promise<void> {
    // Counted as the sign-in throttle counts addresses (an IPv6 client by its /64): one subscriber, one budget.
    const address = addressBucket(clientAddress);
    const at = clock.now();
    const since = new Date(at.getTime() - HOUR_MS).toISOString();
    const { count, oldest } = await registrationAttempts.since(address, since);
    if (count >= REGISTRATIONS_PER_ADDRESS_PER_HOUR) {
      const retryAfter = Math.max(1, Math.ceil((Date.parse(oldest ?? at.toISOString()) + HOUR_MS - at.getTime()) / 1000));
      throw rateLimited(`Too many registrations from this address. Try again in ${retryAfter} seconds.`, retryAfter);
    }
    await registrationAttempts.record(address, at.toISOString());
    // Old rows are useless once out of the window; pruning here keeps the table small without a job.
    if (Math.random() < 0.05) await registrationAttempts.prune(since);
  }

  /** Constant time: a user without a password (social only) or no user runs a dummy check and never matches. */
  async function verifyPassword(user: UserRow | undefined, password: string): Promise<boolean> {
    const ok = await verifyPasswordHash(password, user?.password_hash ?? DUMMY_HASH);
    return ok && Boolean(user?.password_hash);
  }

  /**
   * Changes the user's name and publishes `user.updated` (current values and `changedFields`) to
   * every application the user is a user of, in the same transaction. Nothing changed: no event.
   */
  async function updateProfile(
    userId: string,
    patch: { firstName?: string; lastName?: string },
    origin?: RequestOrigin,
  ): Promise<UserRow | undefined> {
    return transaction(async (trx) => {
      const user = await users.findById(userId, trx);
      if (!user) return undefined;
      const changedFields: string[] = [];
      const update: Partial<UserRow> = {};
      if (patch.firstName !== undefined && patch.firstName !== user.first_name) {
        update.first_name = patch.firstName;
        changedFields.push("firstName");
      }
      if (patch.lastName !== undefined && patch.lastName !== user.last_name) {
        update.last_name = patch.lastName;
        changedFields.push("lastName");
      }
      if (!changedFields.length) return user;
      update.updated_at = now();
      await users.update(userId, update, trx);
      const updated = { ...user, ...update };
      await events.publish(trx, {
        type: "user.updated",
        applicationIds: await applications.ofUser(userId, trx),
        data: { userId, email: updated.email, firstName: updated.first_name, lastName: updated.last_name, changedFields },
      });
      await audit.record(trx, { type: "user.updated", actor: { type: "user", id: userId }, userId, origin, details: { changedFields } });
      return updated;
    });
  }

  /**
   * Deletes the user. `user.deleted` is recorded first, while the application links still exist
   * (they cascade with the user), and in the same transaction as the delete. False when unknown.
   */
  async function deleteUser(userId: string, origin?: RequestOrigin): Promise<boolean> {
    return transaction(async (trx) => {
      const user = await users.findById(userId, trx);
      if (!user) return false;
      await events.publish(trx, {
        type: "user.deleted",
        applicationIds: await applications.ofUser(userId, trx),
        data: { userId, deletedAt: now() },
      });
      // X-ID-LOGOUT-8: the user's sessions end with the account (a cascade): their logout tokens first.
      const logoutTargets = await ctx.logouts.targetsOfUser(userId, trx);
      await users.remove(userId, trx);
      await ctx.logouts.queue(trx, userId, logoutTargets);
      await audit.record(trx, { type: "user.deleted", actor: { type: "user", id: userId }, userId, origin });
      return true;
    });
  }

  /** Links an upstream identity to a user (idempotent). */
  async function linkSocialIdentity(provider: string, subject: string, userId: string, trx?: Tx): Promise<void> {
    await users.linkIdentity(provider, subject, userId, now(), trx);
  }

  /**
   * The user behind an upstream identity (X-ID-SOC-1): the one already linked; else, when the email
   * is new, a new user (no password, `email_verified` as the upstream says), linked, which
   * publishes `user.created` to the application of `clientId`. When the email belongs to an
   * account, the identity is linked to it only if the upstream AND the account say the email is
   * verified; otherwise that account is returned unlinked, for the caller to ask for proof: an
   * account someone registered in advance with the victim's address must not receive the
   * victim's upstream sign-in.
   */
  async function findOrCreateSocialUser(profile: SocialProfile): Promise<SocialUserOutcome> {
    const attempt = () =>
      transaction(async (trx): Promise<SocialUserOutcome> => {
        const linked = await users.findIdentity(profile.provider, profile.subject, trx);
        const linkedUser = linked ? await users.findById(linked.user_id, trx) : undefined;
        if (linkedUser) return { outcome: "signed-in", user: linkedUser, created: false };
        const byEmail = await users.findByEmail(profile.email, trx);
        if (byEmail) {
          if (!profile.emailVerified || !byEmail.email_verified) return { outcome: "unlinked-account", user: byEmail };
          await linkSocialIdentity(profile.provider, profile.subject, byEmail.id, trx);
          return { outcome: "signed-in", user: byEmail, created: false };
        }
        const applicationId = await applicationIdOf(profile.clientId, trx);
        const at = now();
        const row: UserRow = {
          id: randomUUID(),
          email: profile.email.toLowerCase(),
          password_hash: null,
          first_name: profile.firstName,
          last_name: profile.lastName,
          email_verified: profile.emailVerified,
          created_at: at,
          updated_at: at,
        };
        await insertWithEvent(trx, row, applicationId);
        await linkSocialIdentity(profile.provider, profile.subject, row.id, trx);
        return { outcome: "signed-in", user: row, created: true };
      });
    try {
      return await attempt();
    } catch (err) {
      // Two callbacks for the same new upstream user raced: the loser finds the winner's row.
      if (isUniqueViolation(err)) return attempt();
      throw err;
    }
  }

  /**
   * Links an upstream identity to `userId` after the user proved the account (its password,
   * X-ID-SOC-1). When the upstream said the email is verified, the account's email is verified
   * from now on: the upstream vouched for the address, and the holder of the account proved it is
   * theirs. Undefined when the user is gone or the identity was linked to another user meanwhile.
   */
  async function linkProvenSocialIdentity(
    identity: { provider: string; subject: string; emailVerified: boolean },
    userId: string,
  ): Promise<UserRow | undefined> {
    return transaction(async (trx) => {
      const user = await users.findById(userId, trx);
      if (!user) return undefined;
      const linked = await users.findIdentity(identity.provider, identity.subject, trx);
      if (linked && linked.user_id !== userId) return undefined;
      await linkSocialIdentity(identity.provider, identity.subject, userId, trx);
      if (!identity.emailVerified || user.email_verified) return user;
      const update = { email_verified: true, updated_at: now() };
      await users.update(userId, update, trx);
      return { ...user, ...update };
    });
  }

  return {
    registerUser,
    checkRegistrationRate,
    verifyPassword,
    updateProfile,
    deleteUser,
    linkSocialIdentity,
    findOrCreateSocialUser,
    linkProvenSocialIdentity,
    findUserByEmail: (email: string) => users.findByEmail(email),
    findUserById: (id: string) => users.findById(id),
    /** Makes the user a user of the application (on authorization): later user.updated/deleted reach it. */
    addApplicationUser: (applicationId: string, userId: string, trx?: Tx) => applications.addUser(applicationId, userId, now(), trx),
  };
}

export type Users = ReturnType<typeof createUsers>;
