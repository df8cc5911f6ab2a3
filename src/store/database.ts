/**
 * The controller database: one SQLite file in WAL mode shared by every store of this package
 * (turn intents, runs, queue). Opening it sets the pragmas, refuses incompatible state and runs
 * the idempotent schema once.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Cause, Context, Effect, Layer, Scope } from "effect"
import { IncompatibleStore, LegacyLaunchNotifications, StoreFailure } from "../domain/errors.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "./schema.ts"

export interface DatabaseOptions {
  /** Absolute path of the SQLite file (created when missing). */
  readonly filename: string
  /** How long a writer waits for another process's lock before failing with SQLITE_BUSY. */
  readonly busyTimeoutMs?: number
  /**
   * `NORMAL` (default) is durable across process crashes in WAL mode and skips one fsync per
   * commit; `FULL` also survives power loss at roughly 100 µs more per write here.
   */
  readonly synchronous?: "NORMAL" | "FULL"
}

export interface DatabaseService {
  readonly filename: string
  /**
   * Run `effect` inside `BEGIN IMMEDIATE … COMMIT`. The write lock is taken up front, so a
   * read-then-write sequence can never fail with SQLITE_BUSY_SNAPSHOT across processes.
   * Nested calls become savepoints of the outer transaction.
   */
  readonly immediate: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
}

export class Database extends Context.Tag("pi-workflow-turns/Database")<Database, DatabaseService>() {
  static readonly layer = (options: DatabaseOptions) => layer(options)
}

export type OpenError = StoreFailure | LegacyLaunchNotifications | IncompatibleStore

const storeFailure = (operation: string) => (cause: SqlError.SqlError) =>
  new StoreFailure({ operation, message: String(cause.cause ?? cause.message), cause })

const makeImmediate = (sql: SqlClient.SqlClient): DatabaseService["immediate"] =>
  SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [],
    acquireConnection: Effect.flatMap(Scope.make(), (scope) =>
      Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const)
    ),
    begin: (conn) => conn.executeUnprepared("BEGIN IMMEDIATE", [], undefined),
    savepoint: (conn, id) => conn.executeUnprepared(`SAVEPOINT effect_sql_${id}`, [], undefined),
    commit: (conn) => conn.executeUnprepared("COMMIT", [], undefined),
    rollback: (conn) => conn.executeUnprepared("ROLLBACK", [], undefined),
    rollbackSavepoint: (conn, id) =>
      conn.executeUnprepared(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, [], undefined)
  })

const legacyCheck = (sql: SqlClient.SqlClient, filename: string) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ name: string }>`
      SELECT name FROM sqlite_master WHERE type = 'table'
      AND name IN ('pi_workflows_metadata', 'workflow_notifications')`
    const names = new Set(tables.map((t) => t.name))
    if (names.has("pi_workflows_metadata")) {
      const rows = yield* sql<{ value: string }>`
        SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
      const found = rows[0]?.value
      if (found !== undefined && found !== CONTROLLER_SCHEMA) {
        return yield* new IncompatibleStore({ databasePath: filename, found })
      }
    }
    if (names.has("workflow_notifications")) {
      const rows = yield* sql<{ pending: number }>`
        SELECT count(*) AS pending FROM workflow_notifications
        WHERE kind = 'launch_failure' AND delivered_at IS NULL`
      const pending = rows[0]?.pending ?? 0
      if (pending > 0) return yield* new LegacyLaunchNotifications({ databasePath: filename, pending })
    }
  })

const open = (options: DatabaseOptions) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const immediate = makeImmediate(sql)
    const synchronous = options.synchronous ?? "NORMAL"
    const pragmas = Effect.all([
      sql.unsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))}`),
      sql.unsafe(`PRAGMA synchronous = ${synchronous}`),
      sql.unsafe("PRAGMA foreign_keys = ON")
    ])
    yield* immediate(
      Effect.gen(function* () {
        yield* legacyCheck(sql, options.filename)
        for (const statement of controllerSchemaStatements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ${CONTROLLER_SCHEMA})
          ON CONFLICT (key) DO NOTHING`
      })
    ).pipe(
      (migrate) => Effect.zipRight(pragmas, migrate),
      Effect.catchTag("SqlError", (e) => Effect.fail(storeFailure("open")(e)))
    )
    return { filename: options.filename, immediate } satisfies DatabaseService
  })

/** SqlClient + SqliteClient + Database on one file, schema ready. */
export const layer = (
  options: DatabaseOptions
): Layer.Layer<Database | SqlClient.SqlClient | SqliteClient.SqliteClient, OpenError> => {
  // better-sqlite3 throws from its constructor (missing directory, not a database): keep that a typed error.
  const client = SqliteClient.layer({ filename: options.filename }).pipe(
    Layer.catchAllCause((cause) =>
      Layer.fail(
        new StoreFailure({
          operation: "open",
          message: `cannot open ${options.filename}: ${Cause.pretty(cause)}`,
          cause: Cause.squash(cause)
        })
      )
    )
  )
  return Layer.effect(Database, open(options)).pipe(Layer.provideMerge(client))
}
