/**
 * The identity service's storage: each store's implementation, chosen once for the database the
 * service opened (svix's queue backends are chosen the same way). The one place in identity that
 * looks at the dialect; below it, each store is its interface (ADR 0002).
 */
import type { Knex } from "knex";
import { dialectOf } from "../../../server/storage/dialect.ts";
import type { GrantStore } from "./grants.ts";
import { postgresGrants } from "./postgres/grants.ts";
import { sqliteGrants } from "./sqlite/grants.ts";

export interface IdentityStorage {
  grants: GrantStore;
}

export function createIdentityStorage(db: Knex): IdentityStorage {
  const sqlite = dialectOf(db) === "sqlite";
  return {
    grants: sqlite ? sqliteGrants(db) : postgresGrants(db),
  };
}
