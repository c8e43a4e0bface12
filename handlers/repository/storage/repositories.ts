/** The repositories store: each user's repositories, their names unique per owner. */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { isUniqueViolation } from "../../../server/storage/transaction.ts";
import { type RepositoryRow, repositories } from "./schema.ts";

export interface PageArgs {
  page: number;
  pageSize: number;
}
export interface Page<T> {
  items: T[];
  totalCount: number;
}

export interface RepositoryStore {
  /** One page of the owner's repositories, newest first, and how many there are. */
  list(ownerId: string, args: PageArgs): Promise<Page<RepositoryRow>>;
  find(ownerId: string, id: string): Promise<RepositoryRow | undefined>;
  findByName(ownerId: string, name: string): Promise<RepositoryRow | undefined>;
  /** Inserts the repository; false when the owner already has one of this name (the unique index refused it). */
  insert(row: RepositoryRow): Promise<boolean>;
}

export function knexRepositories(db: Knex): RepositoryStore {
  return {
    list: (ownerId, { page, pageSize }) =>
      pageNewestFirst<RepositoryRow>(db(repositories.name).where({ owner_id: ownerId }), page, pageSize),
    find: (ownerId, id) => db<RepositoryRow>(repositories.name).where({ owner_id: ownerId, id }).first(),
    findByName: (ownerId, name) => db<RepositoryRow>(repositories.name).where({ owner_id: ownerId, name }).first(),
    async insert(row) {
      try {
        await db(repositories.name).insert(row);
        return true;
      } catch (err) {
        if (isUniqueViolation(err)) return false;
        throw err;
      }
    },
  };
}
