/**
 * The builds store on PostgreSQL: the claim reads the next queued build `FOR UPDATE SKIP LOCKED`,
 * so that concurrent pollers each take a different build instead of queueing behind one row lock.
 */
import type { Knex } from "knex";
import { type BuildStore, claimNextBuild, knexBuilds } from "../builds.ts";

export function postgresBuilds(db: Knex): BuildStore {
  return { ...knexBuilds(db), claimNext: claimNextBuild(db, (query) => query.forUpdate().skipLocked()) };
}
