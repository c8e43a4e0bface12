/**
 * An online copy of a service's SQLite database (`npm run admin -- backup <dir>`): SQLite's backup
 * API through better-sqlite3, page by page, consistent while the services keep writing (WAL
 * included), which copying the file is not.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

// better-sqlite3 ships no types; this is the part used here.
const Database = createRequire(import.meta.url)("better-sqlite3") as new (
  file: string,
  options: { readonly: boolean; fileMustExist: boolean },
) => {
  backup(destination: string): Promise<{ totalPages: number }>;
  close(): void;
};

export async function backupSqlite(source: string, destination: string): Promise<{ pages: number }> {
  if (existsSync(destination)) throw new Error(`${destination} exists; choose a new file (a backup is never overwritten).`);
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    const { totalPages } = await db.backup(destination);
    return { pages: totalPages };
  } finally {
    db.close();
  }
}
