/**
 * The outbox on SQLite: the portable operations (../deliveries.ts), with the event's insert as a
 * prepared statement (it runs in every transaction that publishes an event), and the dispatcher's
 * claim and record as the prepared statements of dispatch.js. When the database is a file they run
 * on the dispatch thread's own connection (../../sqlite-dispatch-thread.ts), so that their COMMITs
 * never stop the event loop that sends; otherwise (an in-memory database, a URI) on knex's
 * connection, held for the whole statement or transaction so that nothing interleaves.
 *
 * SQLite has one writer at a time: the writers of several delivery rows need no lock order.
 */
import type { Knex } from "knex";
import { BACKSTOP_AUTOCHECKPOINT_PAGES } from "../../../storage/sqlite-checkpointer.ts";
import { assertSynchronousFull, sqliteSettingPragmas } from "../../../storage/sqlite-settings.ts";
import { plannerSafe, preparedStatements, withPrepared } from "../../../storage/sqlite/statements.ts";
import { type DispatchThread, startDispatchThread } from "../../sqlite-dispatch-thread.ts";
import { type AttemptWrite, type DeliveryStore, knexDeliveries } from "../deliveries.ts";
import { type ClaimedRow, claimedDeliveries, webhookEvents } from "../schema.ts";
import { SQL, sqliteDispatch } from "./dispatch.js";

/** dispatch.js is JavaScript, written by hand: its statements must keep the planner rule. */
function checkDispatchStatements(): void {
  for (const [name, sql] of Object.entries(SQL))
    if (plannerSafe(sql) !== sql) throw new Error(`dispatch.js statement ${name} breaks the planner rule: write ${plannerSafe(sql)}`);
}
checkDispatchStatements();

type Dispatch = Pick<DeliveryStore, "claimDue" | "recordAttempts" | "close">;

/** The claim and the record on knex's own connection (a database that is not a file). */
function onKnexConnection(db: Knex): Dispatch {
  const prepared = new WeakMap<object, ReturnType<typeof sqliteDispatch>>();
  const run = withPrepared(db, {});
  const on = <T>(fn: (d: ReturnType<typeof sqliteDispatch>) => T) =>
    run((_s, conn) => {
      let d = prepared.get(conn);
      if (!d) {
        d = sqliteDispatch(conn);
        prepared.set(conn, d);
      }
      return fn(d);
    });
  return {
    claimDue: (now, leaseExpiresAt, leaseToken, limit) =>
      on((d) => d.claimDue(now, leaseExpiresAt, leaseToken, limit).map((row): ClaimedRow => claimedDeliveries.read(row))),
    recordAttempts: (writes: AttemptWrite[], at: string) => on((d) => d.recordAttempts(writes, at)),
    close: async () => {},
  };
}

/** The claim and the record on the dispatch thread's connection to `filename`, started on first use. */
function onDispatchThread(db: Knex, filename: string): Dispatch {
  let thread: DispatchThread | undefined;
  const threadOf = () => {
    if (!thread) {
      thread = startDispatchThread(filename, sqliteSettingPragmas({ autocheckpointPages: BACKSTOP_AUTOCHECKPOINT_PAGES }), (value) =>
        assertSynchronousFull(value, "the webhook dispatch thread's connection"),
      );
      // The connection closes with the database at the latest.
      const client = db.client as { destroy(callback?: unknown): Promise<void> };
      const destroy = client.destroy.bind(client);
      const started = thread;
      client.destroy = async (callback) => {
        await started.stop();
        return destroy(callback);
      };
    }
    return thread;
  };
  return {
    claimDue: (now, leaseExpiresAt, leaseToken, limit) => threadOf().claimDue(now, leaseExpiresAt, leaseToken, limit),
    recordAttempts: (writes, at) => threadOf().recordAttempts(writes, at),
    close: async () => {
      const t = thread;
      thread = undefined;
      await t?.stop();
    },
  };
}

export function sqliteDeliveries(db: Knex): DeliveryStore {
  const filename = (db.client.config.connection as { filename?: string } | undefined)?.filename;
  const dispatch =
    !filename || filename === ":memory:" || filename.startsWith("file:") ? onKnexConnection(db) : onDispatchThread(db, filename);
  const events = preparedStatements({ insert: webhookEvents.insertNamed() });
  return {
    ...knexDeliveries(db),
    insertEvent: async (row, trx) => {
      await events(trx ?? db, (s) => s.insert.run(row));
    },
    ...dispatch,
  };
}
