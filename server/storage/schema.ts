/**
 * Tables as the stores see them: a name, its columns and its row type, declared once per service
 * (`handlers/<service>/storage/schema.ts`) with `defineTable`. The type system checks the column
 * list against the row type (every key listed, nothing else), and a test per service checks the
 * list against the migrated table on both databases, so a column cannot be forgotten in one copy.
 * Raw rows (a prepared statement's, `db.raw`'s) are read through the table's helpers, never cast.
 *
 * Convention: a table's first column is its key, never NULL in a stored row; `pick` reads a LEFT
 * JOIN that found nothing (the key is NULL) as undefined.
 */

/** A table: its name, its columns in order, and the helpers that build SQL and read rows with them. */
export interface Table<Row extends object> {
  readonly name: string;
  readonly columns: readonly (keyof Row & string)[];
  /** `c1, c2, …`, or `alias.c1, alias.c2, …`: the column list of a SELECT or an INSERT. */
  list(alias?: string): string;
  /** `alias.c1 AS alias__c1, …`: the columns of one table in a joined row, apart from the others'. */
  select(alias: string): string;
  /** The row of `alias` out of a joined row selected with `select(alias)`; undefined when its key is NULL. */
  pick(row: Record<string, unknown>, alias: string): Row | undefined;
  /** A row of this table read from a raw row holding (at least) its columns. */
  read(row: Record<string, unknown>): Row;
  /** `INSERT INTO name (c1, …) VALUES (@c1, …)`: better-sqlite3's named parameters, bound from a row object. */
  insertNamed(): string;
  /** `$first, $first+1, …`: PostgreSQL's parameters for the columns in order (an INSERT's VALUES or SELECT). */
  parameters(first: number): string;
  /** The row's values in column order, undefined as NULL: the bindings for `parameters`. */
  values(row: Row): unknown[];
}

/** The row type's keys the column list leaves out: `never` when it names them all. */
type Missing<Row, C extends readonly unknown[]> = Exclude<keyof Row & string, C[number]>;

/**
 * `defineTable<Row>()("table", ["column", …])`: a table whose column list the compiler checks
 * against `Row` (a column that is not a key of `Row` is refused by the element type; a key that is
 * not listed makes the argument's type demand `{ missingColumns }`). Curried so that `Row` is given
 * and the columns inferred.
 */
export function defineTable<Row extends object>() {
  return <const C extends readonly (keyof Row & string)[]>(
    name: string,
    columns: C & ([Missing<Row, C>] extends [never] ? unknown : { missingColumns: Missing<Row, C> }),
  ): Table<Row> => tableOf<Row>(name, columns);
}

function tableOf<Row extends object>(name: string, columns: readonly (keyof Row & string)[]): Table<Row> {
  if (new Set(columns).size !== columns.length) throw new Error(`table ${name}: a column is listed twice`);
  if (!columns.length) throw new Error(`table ${name}: no columns`);
  const key = columns[0]!;
  const fromEntries = (entries: Array<[string, unknown]>): Row => Object.fromEntries(entries) as Row;
  return {
    name,
    columns,
    list: (alias) => columns.map((c) => (alias ? `${alias}.${c}` : c)).join(", "),
    select: (alias) => columns.map((c) => `${alias}.${c} AS ${alias}__${c}`).join(", "),
    pick: (row, alias) => {
      const k = row[`${alias}__${key}`];
      if (k === null || k === undefined) return undefined;
      return fromEntries(columns.map((c) => [c, row[`${alias}__${c}`]]));
    },
    read: (row) => fromEntries(columns.map((c) => [c, row[c]])),
    insertNamed: () => `INSERT INTO ${name} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
    parameters: (first) => columns.map((_, i) => `$${first + i}`).join(", "),
    values: (row) => columns.map((c) => row[c] ?? null),
  };
}
