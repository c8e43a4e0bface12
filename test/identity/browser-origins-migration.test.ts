/**
 * Migration 0007 (X-ID-CORS-2) on a database with applications already in it: each gets the
 * origins of its redirect URIs in `application_origins` (what preflights are answered from) and no
 * `allowed_origins` of its own, so every existing single-page app keeps working from its pages.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../server/storage/db.ts";
import { migrations } from "../../handlers/identity/storage/migrations/index.ts";

const dir = mkdtempSync(join(tmpdir(), "identity-origins-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("migration 0007_browser_origins", () => {
  it("X-ID-CORS-2 existing applications get the origins of their redirect URIs, once each, and no allowedOrigins; the dashboard client none", async () => {
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0007"));
    const old = await openDatabase({ service: "identity", databaseUrl: undefined, dataDir: dir, migrations: before });
    const at = "2026-11-22T10:00:00.000Z";
    const app = (id: string, redirectUris: string[]) => ({
      id,
      organization_id: null,
      name: id,
      client_id: `client-${id}`,
      client_type: "public",
      redirect_uris: JSON.stringify(redirectUris),
      allowed_scopes: "[]",
      enabled_providers: "[]",
      branding: "{}",
      first_party: false,
      created_at: at,
      updated_at: at,
    });
    await old("applications").insert([
      app("00000000-0000-4000-8000-000000000001", [
        "https://notes.example.com/callback",
        "https://notes.example.com/silent",
        "http://localhost:5173/cb",
      ]),
      app("00000000-0000-4000-8000-000000000002", ["http://127.0.0.1/callback"]),
      // The built-in dashboard client: its pages are on the service's own origin, never cross-origin.
      { ...app("00000000-0000-4000-8000-000000000003", ["https://id.example.com/dashboard"]), first_party: true },
    ]);
    await old.destroy();

    const db = await openDatabase({ service: "identity", databaseUrl: undefined, dataDir: dir, migrations });
    try {
      const rows = await db("application_origins").select("application_id", "origin").orderBy(["application_id", "origin"]);
      expect(rows).toEqual([
        { application_id: "00000000-0000-4000-8000-000000000001", origin: "http://localhost:5173" },
        { application_id: "00000000-0000-4000-8000-000000000001", origin: "https://notes.example.com" },
        { application_id: "00000000-0000-4000-8000-000000000002", origin: "http://127.0.0.1" },
      ]);
      expect(await db("applications").whereNotNull("allowed_origins").count({ n: "*" })).toEqual([{ n: 0 }]);
      // Deleting an application takes its origins with it.
      await db("applications").where({ id: "00000000-0000-4000-8000-000000000002" }).delete();
      expect(await db("application_origins").count({ n: "*" })).toEqual([{ n: 2 }]);
    } finally {
      await db.destroy();
    }
  });
});
