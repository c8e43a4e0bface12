/**
 * What bench:scale (storage-scale.ts) and the purge profile (purge-profile.ts) seed alike: the one
 * organization and application that every seeded user's codes, grants and tokens belong to.
 */
import type { Database } from "../server/storage/db.ts";

export const ORG = "00000000-0000-4000-8000-00000000000a";
export const APP = "00000000-0000-4000-8000-00000000000b";

/** The organization ORG and its confidential application APP, created at `at`. */
export async function seedOrganizationAndApplication(db: Database, at: string): Promise<void> {
  await db("organizations").insert({ id: ORG, name: "Org", created_at: at });
  await db("applications").insert({
    id: APP,
    organization_id: ORG,
    name: "App",
    client_id: "bench-app",
    client_type: "confidential",
    redirect_uris: "[]",
    allowed_scopes: "[]",
    enabled_providers: "[]",
    branding: "{}",
    created_at: at,
    updated_at: at,
  });
}
