/**
 * The busiest queries of a large identity database keep their indexes (docs/operations.md, "Data
 * growth"): the planner's own answer (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN) for
 * exactly the queries that run, so a later migration that drops or changes an index fails here,
 * not in production at 10⁶ rows.
 * - the delivery history, first page, a bounded `page` and a cursor page: an index in the
 *   history's order, no sort; its total: one key lookup;
 * - every admin-authenticated request: the admin's organizations, by index, no sort;
 * - every use of an access token: its application, user, grant and revocation (X-ID-TOK-5), four key lookups;
 * - deleting a user, an application, an organization or a grant: every foreign key (the cascades)
 *   has an index on its column;
 * - every retention rule finds its batch through an index.
 * On PostgreSQL sequential scans are priced out (`enable_seqscan = off`), so an empty test table
 * still shows which index the planner would use, and a missing one shows as a Seq Scan.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { loadConfig } from "../../app/load-config.ts";
import { batchSelect } from "../../server/storage/retention.ts";
import { historyQuery } from "../../server/webhooks/storage/attempt-history.ts";
import { HISTORY_INDEX } from "../../server/webhooks/storage/migrations/attempt-history.ts";
import { knexOrganizations } from "../../handlers/identity/storage/organizations.ts";
import { identityRetentionRules } from "../../handlers/identity/storage/retention-rules.ts";
import { identityRetentionOf } from "../../handlers/identity/config.ts";
import { ACCESS_TOKEN_STATE_SQL } from "../../handlers/identity/storage/grants.ts";
import { openIdentityDb, type IdentityDb, type StorageKind } from "../support/storage-fixtures.ts";

const endpoint = randomUUID();
const after = { attemptedAt: "2026-06-01T00:00:00.000Z", attemptNumber: 2, id: randomUUID() };
const countQuery = (db: Knex) => db("webhook_attempt_counts").where({ endpoint_id: endpoint }).first("attempts");

/** The queries under test, each as knex builds it for the service. */
function hotQueries(db: Knex): Array<[string, Knex.QueryBuilder]> {
  const adminOrganizations = knexOrganizations(db).administeredBy(randomUUID()) as unknown as Knex.QueryBuilder;
  const tokenState = db.raw(ACCESS_TOKEN_STATE_SQL, [
    randomUUID(),
    randomUUID(),
    `${randomUUID()}.x`,
    "client",
  ]) as unknown as Knex.QueryBuilder;
  return [
    ["history, first page", historyQuery(db, endpoint, { page: 1 }, 20)],
    ["history, page 50 (bounded OFFSET)", historyQuery(db, endpoint, { page: 50 }, 20)],
    ["history, after a cursor", historyQuery(db, endpoint, { after }, 20)],
    ["history total", countQuery(db)],
    ["an admin's organizations", adminOrganizations],
    ["an access token's liveness", tokenState],
  ];
}

const sql = (q: Knex.QueryBuilder) => q.toSQL() as { sql: string; bindings: readonly unknown[] };

describe("SQLite query plans", () => {
  let t: IdentityDb;
  beforeAll(async () => {
    t = await openIdentityDb("sqlite");
  });
  afterAll(async () => t?.close());

  const plan = async (q: { sql: string; bindings: readonly unknown[] }) =>
    ((await t.db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings as Knex.RawBinding[])) as Array<{ detail: string }>).map((r) => r.detail);

  it("the hot queries search an index and never build a temporary B-tree to sort", async () => {
    for (const [name, query] of hotQueries(t.db)) {
      const steps = await plan(sql(query));
      expect(steps.join(" | "), name).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX|^SEARCH \w+ USING PRIMARY KEY/);
      expect(steps.join(" | "), name).not.toMatch(/SCAN|TEMP B-TREE/);
    }
    const [first] = await plan(sql(historyQuery(t.db, endpoint, { after }, 20)));
    expect(first).toContain(HISTORY_INDEX);
    expect(first).toMatch(/\(endpoint_id=\? AND \(attempted_at,attempt_number,id\)<\(\?,\?,\?\)\)/); // one range, not a filter
  });

  it("deleting any parent row (a user, an application, an organization, a grant…) finds its child rows through an index on every foreign key", async () => {
    const children = (await t.db.raw(
      'SELECT m.name AS child, f."from" AS col, f."table" AS parent FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = \'table\'',
    )) as Array<{ child: string; col: string; parent: string }>;
    const keys = children.map((c) => `${c.child}.${c.col}`);
    for (const k of [
      "oauth_codes.user_id",
      "organization_admins.user_id",
      "oauth_codes.application_id",
      "oauth_grants.application_id",
      "oauth_requests.application_id",
      "oauth_consents.application_id",
      "applications.organization_id",
      "webhooks.organization_id",
    ]) {
      expect(keys).toContain(k);
    }
    for (const { child, col, parent } of children) {
      const steps = await plan({ sql: `DELETE FROM ${child} WHERE ${col} = ?`, bindings: ["u"] });
      expect(steps.join(" | "), `${child}.${col} -> ${parent}`).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX \w+ \(\w+=\?/);
    }
  });

  it("every retention rule finds its batch through an index, in the index's order (no sort)", async () => {
    for (const rule of identityRetentionRules(identityRetentionOf(loadConfig({})).periods)) {
      // A run's first batch, and a later one that starts where the last ended.
      for (const from of [undefined, "2026-01-01T00:00:00.000Z"]) {
        const steps = await plan(sql(batchSelect(t.db, rule, new Date(), 500, from)));
        expect(steps.join(" | "), rule.name).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX|^SEARCH \w+ USING PRIMARY KEY/);
        expect(steps.join(" | "), rule.name).not.toMatch(/TEMP B-TREE/);
      }
    }
  });
});

describe("PostgreSQL query plans (same indexes)", () => {
  let t: IdentityDb;
  beforeAll(async () => {
    t = await openIdentityDb("postgres" satisfies StorageKind);
  }, 120_000);
  afterAll(async () => t?.close());

  /** Every node of the plan, flattened: [node type, relation, index]. */
  /** `ordered`: bitmap scans priced out too, so a plan that needs a Sort shows that no index gives the order. */
  const plan = async (q: { sql: string; bindings: readonly unknown[] }, ordered = false) =>
    t.db.transaction(async (trx) => {
      await trx.raw("SET LOCAL enable_seqscan = off");
      if (ordered) await trx.raw("SET LOCAL enable_bitmapscan = off");
      const rows = (await trx.raw(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.bindings as Knex.RawBinding[])) as {
        rows: Array<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>;
      };
      const nodes: PlanNode[] = [];
      const walk = (n: PlanNode) => {
        nodes.push(n);
        for (const c of n.Plans ?? []) walk(c);
      };
      walk(rows.rows[0]!["QUERY PLAN"][0]!.Plan);
      return nodes.map(
        (n) =>
          `${n["Node Type"]}${n["Relation Name"] ? ` on ${n["Relation Name"]}` : ""}${n["Index Name"] ? ` using ${n["Index Name"]}` : ""}`,
      );
    });

  it("the hot queries use an index scan and no sort", async () => {
    for (const [name, query] of hotQueries(t.db)) {
      const nodes = (await plan(sql(query))).join(" | ");
      expect(nodes, name).toMatch(/Index (Only )?Scan/);
      expect(nodes, name).not.toMatch(/Seq Scan|Sort/);
    }
    expect((await plan(sql(historyQuery(t.db, endpoint, { after }, 20)))).join(" | ")).toContain(HISTORY_INDEX);
  });

  it("every foreign key has an index on its column (the cascades of users, applications, organizations, grants…)", async () => {
    const children = (
      (await t.db.raw(`SELECT c.conrelid::regclass::text AS child, a.attname AS col, c.confrelid::regclass::text AS parent
                         FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
                        WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`)) as {
        rows: Array<{ child: string; col: string; parent: string }>;
      }
    ).rows;
    const keys = children.map((c) => `${c.child}.${c.col}`);
    for (const k of ["oauth_codes.user_id", "oauth_codes.application_id", "oauth_grants.application_id", "applications.organization_id"])
      expect(keys).toContain(k);
    for (const { child, col, parent } of children) {
      const nodes = (await plan({ sql: `DELETE FROM ${child} WHERE ${col} = ?`, bindings: ["u"] })).join(" | ");
      expect(nodes, `${child}.${col} -> ${parent}`).toMatch(/Index (Only )?Scan|Bitmap Index Scan/);
      expect(nodes, `${child}.${col} -> ${parent}`).not.toMatch(/Seq Scan/);
    }
  });

  it("every retention rule finds its batch through an index, in the index's order (no sort)", async () => {
    for (const rule of identityRetentionRules(identityRetentionOf(loadConfig({})).periods)) {
      // A run's first batch, and a later one that starts where the last ended.
      for (const from of [undefined, "2026-01-01T00:00:00.000Z"]) {
        const batch = batchSelect(t.db, rule, new Date(), loadConfig({}).IDENTITY_RETENTION_BATCH_ROWS, from);
        const nodes = (await plan(sql(batch), true)).join(" | ");
        expect(nodes, rule.name).toMatch(/Index (Only )?Scan/);
        expect(nodes, rule.name).not.toMatch(/Seq Scan|Sort/);
      }
    }
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}
