/**
 * The planner's own answer for the growth-sensitive statements on the large scale (real
 * statistics, nothing forced), one line each: SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN.
 * The statements are those the services run, built by the same code: the history's page
 * (`historyQuery`), the admin's organizations (the identity store's knex read, which hands back its
 * builder unrun), a retention batch (`batchSelect`); and the DELETEs that a deletion's cascades run.
 */
import type { Knex } from "knex";
import { createIdentityStorage, identityRetentionRules } from "../../handlers/identity/storage/index.ts";
import { loadConfig } from "../../app/load-config.ts";
import { identityRetentionOf } from "../../handlers/identity/config.ts";
import { batchSelect } from "../../server/storage/retention.ts";
import { historyQuery } from "../../server/webhooks/storage/index.ts";
import type { Scale } from "./databases.ts";
import { userId, WEBHOOK } from "./keys.ts";
import { lastHistoryPageCursor } from "./seed-identity.ts";
import { ON_POSTGRES } from "./settings.ts";

interface Statement {
  sql: string;
  bindings: readonly unknown[];
}

/** A knex builder's statement, unrun. */
function statementOf(builder: unknown): Statement {
  if (typeof (builder as Partial<Knex.QueryBuilder>)?.toSQL !== "function") throw new Error("not a knex builder: its plan cannot be read");
  return (builder as Knex.QueryBuilder).toSQL() as Statement;
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

export async function plans(s: Scale): Promise<string[]> {
  const { identity: db, n } = s;
  const rules = identityRetentionRules(identityRetentionOf(loadConfig({})).periods);
  const statements: Array<[string, Statement]> = [
    ["history, first page", statementOf(historyQuery(db, WEBHOOK, { page: 1 }, 20))],
    ["history, after a cursor", statementOf(historyQuery(db, WEBHOOK, { after: await lastHistoryPageCursor(db) }, 20))],
    ["history total", statementOf(db("webhook_attempt_counts").where({ endpoint_id: WEBHOOK }).first("attempts"))],
    ["an admin's organizations", statementOf(createIdentityStorage(db).organizations.administeredBy(userId(n >> 1)))],
    ["user deletion, cascade into codes", { sql: "DELETE FROM oauth_codes WHERE user_id = ?", bindings: [userId(n >> 1)] }],
    // Another application than the one that holds every seeded code (for that one a scan is the right plan).
    [
      "application deletion, cascade into codes",
      { sql: "DELETE FROM oauth_codes WHERE application_id = ?", bindings: ["00000000-0000-4000-8000-0000000000ff"] },
    ],
    ...rules
      .filter((r) => r.name === "codes")
      .map((r) => [`retention batch: ${r.name}`, statementOf(batchSelect(db, r, new Date(), 10))] as [string, Statement]),
  ];
  const out: string[] = [];
  for (const [name, { sql, bindings }] of statements) {
    if (ON_POSTGRES) {
      const rows = (await db.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings as Knex.RawBinding[])) as {
        rows: Array<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>;
      };
      const nodes: string[] = [];
      const walk = (p: PlanNode) => {
        nodes.push(
          `${p["Node Type"]}${p["Index Name"] ? ` using ${p["Index Name"]}` : p["Relation Name"] ? ` on ${p["Relation Name"]}` : ""}`,
        );
        for (const c of p.Plans ?? []) walk(c);
      };
      walk(rows.rows[0]!["QUERY PLAN"][0]!.Plan);
      out.push(`${name}: ${nodes.join(" > ")}`);
    } else {
      const rows = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as Knex.RawBinding[])) as Array<{ detail: string }>;
      out.push(`${name}: ${rows.map((r) => r.detail).join(" | ")}`);
    }
  }
  return out;
}
