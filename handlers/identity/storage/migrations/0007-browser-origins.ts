/**
 * Browser origins of applications (X-ID-CORS-2): `applications.allowed_origins`, the explicit
 * setting (JSON string[]; null: the origins of the redirect URIs), and `application_origins`, the
 * origins in effect, one row each, so that a CORS preflight, which names no client, is answered by
 * one indexed lookup rather than a scan of every application. Existing applications get the
 * origins of their redirect URIs.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const browserOrigins: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.text("allowed_origins");
    });
    await db.schema.createTable("application_origins", (t) => {
      // An origin is at most scheme + host (253) + port: 300 is plenty.
      t.string("origin", 300).notNullable();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.primary(["origin", "application_id"]);
      // Replacing an application's rows, and the cascade of its deletion, find them by application.
      t.index(["application_id"], "application_origins_by_application");
    });
    // The built-in dashboard client is left out: its pages are on this server's own origin, which is never cross-origin.
    const apps = (await db("applications").where({ first_party: false }).select("id", "redirect_uris")) as Array<{
      id: string;
      redirect_uris: string;
    }>;
    for (const app of apps) {
      const origins = [...new Set((JSON.parse(app.redirect_uris) as string[]).map((u) => new URL(u).origin))];
      if (origins.length) await db("application_origins").insert(origins.map((origin) => ({ origin, application_id: app.id })));
    }
  },
  async down(db: Knex) {
    await db.schema.dropTable("application_origins");
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("allowed_origins");
    });
  },
};
