/** The users store: user accounts (email stored lower-case) and their links to upstream (social) identities. */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type UserRow, userIdentities, users } from "./schema.ts";

export interface UserStore {
  findById(id: string, tx?: Tx): Promise<UserRow | undefined>;
  findByEmail(email: string, tx?: Tx): Promise<UserRow | undefined>;
  insert(row: UserRow, tx?: Tx): Promise<void>;
  update(id: string, patch: Partial<UserRow>, tx?: Tx): Promise<void>;
  /** Deletes the user (and, by cascade, what hangs off it); false when there was none. */
  remove(id: string, tx?: Tx): Promise<boolean>;
  /** The user an upstream identity (provider and subject) is linked to. */
  findIdentity(provider: string, subject: string, tx?: Tx): Promise<{ user_id: string } | undefined>;
  /** Links an upstream identity to the user; a link that exists already is kept as it is. */
  linkIdentity(provider: string, subject: string, userId: string, at: string, tx?: Tx): Promise<void>;
  /** Sets the password hash only while it is still `expectedHash` (a concurrent change wins once); false otherwise. */
  replacePasswordHash(id: string, expectedHash: string, newHash: string, at: string, tx?: Tx): Promise<boolean>;
}

export function knexUsers(db: Knex): UserStore {
  return {
    findById: (id, tx) => (tx ?? db)<UserRow>(users.name).where({ id }).first(),
    findByEmail: (email, tx) => (tx ?? db)<UserRow>(users.name).where({ email: email.toLowerCase() }).first(),
    async insert(row, tx) {
      await (tx ?? db)(users.name).insert({ ...row, email: row.email.toLowerCase() });
    },
    async update(id, patch, tx) {
      await (tx ?? db)(users.name).where({ id }).update(patch);
    },
    remove: async (id, tx) => (await (tx ?? db)(users.name).where({ id }).delete()) > 0,
    findIdentity: (provider, subject, tx) => (tx ?? db)(userIdentities.name).where({ provider, subject }).first("user_id"),
    async linkIdentity(provider, subject, userId, at, tx) {
      await (tx ?? db)(userIdentities.name)
        .insert({ provider, subject, user_id: userId, created_at: at })
        .onConflict(["provider", "subject"])
        .ignore();
    },
    replacePasswordHash: async (id, expectedHash, newHash, at, tx) =>
      (await (tx ?? db)(users.name).where({ id, password_hash: expectedHash }).update({ password_hash: newHash, updated_at: at })) === 1,
  };
}
