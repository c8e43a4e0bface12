/**
 * The keys of the rows bench:scale seeds, written twice that must agree: in SQL, for the seeding
 * (row i of a recursive CTE), and in TypeScript, for the timed operations that look row i up.
 */
import { createHash } from "node:crypto";
import type { SecretKeys } from "../../server/security/tokens.ts";

/** The organization and application every seeded user's codes, grants and tokens belong to. */
export const ORG = "00000000-0000-4000-8000-00000000000a";
export const APP = "00000000-0000-4000-8000-00000000000b";
/** Identity's one webhook, holding every seeded attempt and delivery. */
export const WEBHOOK = "00000000-0000-4000-8000-00000000000c";
/** Email's one webhook endpoint, holding every seeded delivery. */
export const EMAIL_ENDPOINT = "00000000-0000-4000-8000-00000000000d";
/** The API key every seeded message was sent with. */
export const API_KEY = "00000000-0000-4000-8000-00000000000e";
/** The seeded times count from here: row i at T0 + i s (attempts, deliveries, messages) or T0 + i ms (time-ordered keys). */
export const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** The i-th user's id (1-based): distinct, and random-looking in its leading digits like a UUIDv4 index. */
export const userId = (i: number) =>
  `${((i * 2654435761) % 4294967296).toString(16).padStart(8, "0")}-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
/** SQL for userId(i) on either database. */
export const userIdSql = (pg: boolean, i = "i") =>
  pg
    ? `lpad(to_hex(((${i}::bigint * 2654435761) % 4294967296)), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(${i}), 12, '0')`
    : `printf('%08x-0000-4000-8000-%012x', (${i} * 2654435761) % 4294967296, ${i})`;

/** SQL for the i-th row's id of a table, `tag` telling the tables apart (`c000` messages, `d000` copies, …). */
export const rowIdSql = (pg: boolean, tag: string, i = "i") =>
  pg
    ? `lpad(to_hex(${i}), 8, '0') || '-0000-4000-${tag}-' || lpad(to_hex(${i}), 12, '0')`
    : `printf('%08x-0000-4000-${tag}-%012x', ${i}, ${i})`;
/** The i-th seeded message's id (rowIdSql's `c000`). */
export const emailId = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-c000-${i.toString(16).padStart(12, "0")}`;

/**
 * How the service keys codes and refresh tokens (IDENTITY_TOKEN_KEYS, server/security/tokens.ts):
 * `hashed`, a SHA-256 (random: every insert and lookup on a random index page), or `time-ordered`,
 * the issue time's 12 hex digits and 52 of a hash. Seeded rows are keyed alike: the i-th row of
 * `salt` gets a pseudo-random 64-hex value the benchmark can compute again (a hash stand-in: md5 on
 * PostgreSQL, multiplicative scrambling on SQLite, which has no hash function), behind the time
 * T0 + i ms when time-ordered.
 */
const SCRAMBLE = [2654435761, 2246822519, 3266489917, 668265263, 374761393, 2870177450, 1103515245, 40503];
const pseudoHashSql = (pg: boolean, salt: number) =>
  pg
    ? `md5('${salt}:' || i) || md5('${salt}:' || (i + 1))`
    : `printf('${"%08x".repeat(8)}', ${SCRAMBLE.map((m) => `((i + ${salt}) * ${m}) % 4294967296`).join(", ")})`;
const pseudoHash = (pg: boolean, salt: number, i: number) =>
  pg
    ? createHash("md5").update(`${salt}:${i}`).digest("hex") +
      createHash("md5")
        .update(`${salt}:${i + 1}`)
        .digest("hex")
    : SCRAMBLE.map((m) => (((i + salt) * m) % 4294967296).toString(16).padStart(8, "0")).join("");

/** SQL for the i-th row's key of `salt` (0: codes, 1: refresh tokens), keyed as `keys` says. */
export const secretKeySql = (pg: boolean, keys: SecretKeys, salt: number) =>
  keys === "hashed"
    ? pseudoHashSql(pg, salt)
    : `${pg ? `lpad(to_hex(${T0}::bigint + i), 12, '0')` : `printf('%012x', ${T0} + i)`} || substr(${pseudoHashSql(pg, salt)}, 1, 52)`;
/** The i-th seeded code's key (as secretKeySql seeds it, on either database). */
export const codeHash = (pg: boolean, keys: SecretKeys, i: number) =>
  keys === "hashed" ? pseudoHash(pg, 0, i) : (T0 + i).toString(16).padStart(12, "0") + pseudoHash(pg, 0, i).slice(0, 52);
