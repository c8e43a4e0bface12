/** The health operation every service has: 200 when the database answers. */
import type { Clock } from "../clock.ts";
import type { Db } from "../storage/db.ts";

export function healthHandler(service: string, db: Db, clock: Clock) {
  return async () => {
    await db.raw("select 1");
    return { status: 200 as const, body: { status: "ok" as const, service, time: clock.now().toISOString() } };
  };
}
