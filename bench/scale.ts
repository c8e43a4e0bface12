/**
 * Cost at scale: the identity and email services' growth-sensitive operations with their tables at
 * 10³ and at 10⁶ rows, each figure against its 10³ one (target: within 1.2×, a PASS/NOT MET line per
 * figure). Seeds straight through SQL in bulk (a recursive CTE per table, one statement each), then
 * alternates small and large measurements. Not part of the test run.
 *
 *   npm run bench:scale                            # SQLite, 10³ vs 10⁶
 *   BENCH_LARGE=100000 BENCH_ROUNDS=2 npm run bench:scale
 *   BENCH_DATABASE_URL=postgres://… npm run bench:scale     # PostgreSQL (a database of its own per scale)
 *   BENCH_PURGE_ONLY=1 npm run bench:scale         # only the large scale's two purges (seeding the large one only)
 *   BENCH_PURGE_ONLY=messages npm run bench:scale  # only the messages' purge (seeding the email database only)
 *
 * Measured, each as the median of many warm runs, through the services' own stores, the small and
 * the large database taking turns run by run (scale/timing.ts):
 * - the token exchange's storage: the code and its user read, then the code consumed and the grant
 *   and its refresh token stored in one transaction (group-committed on SQLite), among N codes,
 *   grants and refresh tokens;
 * - a sign-in's storage: the user by email among N users, and the new session stored;
 * - the dispatcher's claim of 50 due deliveries among N (one in ten pending), as the engine runs it
 *   (on SQLite on its dispatch thread); the leases are given back between runs, untimed;
 * - email: `GET /v1/emails/{id}`'s reads (the message, its copies, its timeline, its attachments)
 *   among N messages, and the delivery history of one email webhook endpoint holding N deliveries
 *   (first page with each delivery's attempts, and its total);
 * - the delivery history of one webhook holding every attempt: first page (page + exact total),
 *   deepest page by cursor (the last one), and `page` at its bound (the 10000th row);
 * - an admin-authenticated request's lookup (the admin's organizations), among N admins;
 * - deleting a user (the cascade into N codes, N admin rows, sessions, grants…), in one
 *   transaction: the DELETE and the COMMIT are also reported apart;
 * - the retention purge of the expired codes, batch by batch (IDENTITY_RETENTION_BATCH_ROWS rows
 *   each), with the event loop's longest delay while it runs; against a control on the same
 *   database, one-row writes (a request's COMMIT) at the purge's pace, before and after it; and
 *   the same for the email messages past their period (a tenth of them, each batch cascading into
 *   the messages' copies and timelines).
 *
 * scale/: settings.ts (the variables), databases.ts (a scale's two databases), seed-identity.ts and
 * seed-email.ts (the rows, keyed by keys.ts), operations.ts (the timed operations), purges.ts,
 * plans.ts (the query plans), report.ts (the output).
 */
import { performance } from "node:perf_hooks";
import { openScale, type Scale, sqliteFileMB } from "./scale/databases.ts";
import { measure } from "./scale/operations.ts";
import { plans } from "./scale/plans.ts";
import { runPurges } from "./scale/purges.ts";
import { printPlans, printPurges, printRound, printRounds, type Round } from "./scale/report.ts";
import { seedEmail } from "./scale/seed-email.ts";
import { seedIdentity } from "./scale/seed-identity.ts";
import { LARGE, MESSAGES_ONLY, ON_POSTGRES, PURGE_ONLY, ROUNDS, SMALL, TOKEN_KEYS } from "./scale/settings.ts";

/** Seeds a scale's databases (only the email one under BENCH_PURGE_ONLY=messages). */
async function seed(s: Scale): Promise<void> {
  const { n } = s;
  const started = performance.now();
  if (MESSAGES_ONLY) {
    await seedEmail(s.email, n, ON_POSTGRES);
    console.log(`seeded ${n.toLocaleString("en")} rows per email table in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return;
  }
  await seedIdentity(s.identity, n, ON_POSTGRES, TOKEN_KEYS);
  await seedEmail(s.email, n, ON_POSTGRES);
  console.log(
    `seeded ${n.toLocaleString("en")} rows per table in ${((performance.now() - started) / 1000).toFixed(1)} s (codes and refresh tokens keyed ${TOKEN_KEYS})`,
  );
}

async function main() {
  console.log(
    `storage scale: ${ON_POSTGRES ? "PostgreSQL" : "SQLite"}, ${SMALL.toLocaleString("en")} vs ${LARGE.toLocaleString("en")} rows, ${ROUNDS} alternated rounds, node ${process.version}`,
  );
  if (PURGE_ONLY) {
    const large = await openScale(LARGE);
    try {
      await seed(large);
      printPurges(await runPurges(large));
    } finally {
      await large.close();
    }
    return;
  }
  const small = await openScale(SMALL);
  const large = await openScale(LARGE);
  try {
    await seed(small);
    await seed(large);
    if (!ON_POSTGRES)
      console.log(`file sizes: ${sqliteFileMB(small.identity).toFixed(1)} MB and ${sqliteFileMB(large.identity).toFixed(1)} MB`);
    const rounds: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      rounds.push(await measure(small, large));
      printRound(r, rounds[r]!);
    }
    printRounds(rounds);
    printPlans(await plans(large));
    printPurges(await runPurges(large));
  } finally {
    await small.close();
    await large.close();
  }
}

await main();
