/** The signing keys' rows of a service's database (in-process targets): what a rotation leaves behind. */
import type { Knex } from "knex";
import { readKeyRows, type KeyRow } from "../../server/keys/store.ts";

export const keyRingRows = (db: Knex, purpose: string): Promise<KeyRow[]> => readKeyRows(db, purpose);
