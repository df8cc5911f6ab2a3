/**
 * Look into a SQLite file after a run without changing it: read-only, file must exist. Used to
 * assert `workflow_turn_intents` rows written by the extension inside Pi's process.
 */
import Database from "better-sqlite3"

export type Row = Readonly<Record<string, unknown>>

export interface PeekOptions {
  /** A SQL boolean expression over the table's columns, with `?` placeholders. */
  readonly where?: string
  readonly params?: ReadonlyArray<string | number | null>
  /** Column list for ORDER BY, e.g. `"requested_at, intent_id"`. Default: none (table order). */
  readonly orderBy?: string
}

const withReadOnly = <T>(file: string, use: (db: Database.Database) => T): T => {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return use(db)
  } finally {
    db.close()
  }
}

/** Names of the tables in the file. */
export const peekTables = (file: string): ReadonlyArray<string> =>
  withReadOnly(file, (db) =>
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all()
      .filter((name): name is string => typeof name === "string")
  )

/** Rows of `table`. The table name is checked against the schema, never spliced in unchecked. */
export const peekRows = (file: string, table: string, options: PeekOptions = {}): ReadonlyArray<Row> =>
  withReadOnly(file, (db) => {
    const exists = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
      .pluck()
      .get(table)
    if (exists === undefined) throw new Error(`sqlite-peek: no table ${table} in ${file}`)
    const where = options.where === undefined ? "" : ` WHERE ${options.where}`
    const order = options.orderBy === undefined ? "" : ` ORDER BY ${options.orderBy}`
    const rows: ReadonlyArray<unknown> = db
      .prepare(`SELECT * FROM "${table}"${where}${order}`)
      .all(...(options.params ?? []))
    return rows.filter((row): row is Row => typeof row === "object" && row !== null)
  })

/** `workflow_turn_intents` rows in request order (the table issue 5/6 tests assert on). */
export const peekTurnIntents = (
  file: string,
  options: Omit<PeekOptions, "orderBy"> = {}
): ReadonlyArray<Row> =>
  peekRows(file, "workflow_turn_intents", { ...options, orderBy: "requested_at, intent_id" })
