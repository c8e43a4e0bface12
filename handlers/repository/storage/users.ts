/** The users store: the repository service's own accounts (email stored lower-case). */
import type { Knex } from "knex";
import { type UserRow, users } from "./schema.ts";

export interface UserStore {
  findByEmail(email: string): Promise<UserRow | undefined>;
  findById(id: string): Promise<UserRow | undefined>;
  insert(row: UserRow): Promise<void>;
}

export function knexUsers(db: Knex): UserStore {
  return {
    findByEmail: (email) => db<UserRow>(users.name).where({ email: email.toLowerCase() }).first(),
    findById: (id) => db<UserRow>(users.name).where({ id }).first(),
    async insert(row) {
      await db(users.name).insert({ ...row, email: row.email.toLowerCase() });
    },
  };
}
