/**
 * bench:scale's settings, read from its BENCH_* variables (bench/README.md, "Cost at scale"), and
 * its target.
 */
import { loadConfig } from "../../app/load-config.ts";
import type { SecretKeys } from "../../server/security/tokens.ts";

/** Rows per table at each scale. */
export const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
export const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
/** Rounds: each measures every operation on both scales. */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Warm runs per figure and round: reads, user deletions, token exchanges. */
export const READS = Number(process.env.BENCH_READS ?? 300);
export const DELETES = Number(process.env.BENCH_DELETES ?? 200);
/** Token exchanges per round: each takes a fresh code, and the small database has 900 live ones. */
export const EXCHANGES = Number(process.env.BENCH_EXCHANGES ?? 200);

/** `postgres://…`: every database on that server, a database of its own each; unset: SQLite files in a temporary folder. */
export const POSTGRES_URL = process.env.BENCH_DATABASE_URL || undefined;
export const ON_POSTGRES = POSTGRES_URL !== undefined;

/** BENCH_PURGE_ONLY: only the large scale's purges (seeding the large scale only). */
export const PURGE_ONLY = Boolean(process.env.BENCH_PURGE_ONLY);
/** BENCH_PURGE_ONLY=messages: the email service's purge alone, on its database alone. */
export const MESSAGES_ONLY = process.env.BENCH_PURGE_ONLY === "messages";

/** Each figure at the large scale within this factor of its small one; a purge batch's p99 within it of a one-row write's. */
export const TARGET = 1.2;

/** How the service keys codes and refresh tokens (IDENTITY_TOKEN_KEYS): the seeded rows and the exchanges' are keyed alike. */
export const TOKEN_KEYS: SecretKeys = loadConfig({ IDENTITY_TOKEN_KEYS: process.env.IDENTITY_TOKEN_KEYS }).IDENTITY_TOKEN_KEYS;
