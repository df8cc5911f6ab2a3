/**
 * PROTOTYPE (bench only) of a proposed src/store/database.ts: the Database owns its
 * better-sqlite3 handle, builds the @effect/sql client over that same handle, and offers
 * `prepare(text)`: a statement prepared once that runs synchronously when no transaction is open
 * on the connection (a synchronous statement cannot interleave with another fiber's work), and
 * through the SqlClient — which serialises on the connection and joins the caller's transaction —
 * when one is. That skips, per query, the Scope, the semaphore, the span and the prepare-cache
 * lookup that @effect/sql's statement path costs (~14 µs here, measured in bench/breakdown.ts).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import Sqlite from "better-sqlite3"
import { Context, Effect, Layer, Scope } from "effect"
import { IncompatibleStore, LegacyLaunchNotifications, StoreFailure } from "../../src/domain/errors.ts"
import { Database, type DatabaseService, type OpenError } from "../../src/store/database.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../../src/store/schema.ts"

export interface Prepared {
  /** All result rows (RETURNING included); statements prepared once, never re-prepared. */
  readonly all: (params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
}

export interface FastDatabaseService {
  readonly filename: string
  readonly prepare: (text: string) => Prepared
}

export class FastDatabase extends Context.Tag("pi-workflow-turns/bench/FastDatabase")<
  FastDatabase,
  FastDatabaseService
>() {}

export interface FastDatabaseOptions {
  readonly filename: string
  readonly synchronous?: "NORMAL" | "FULL"
  readonly busyTimeoutMs?: number
}

const executeFailed = (cause: unknown) =>
  new SqlError.SqlError({ cause, message: "Failed to execute statement" })

const makeConnection = (db: Sqlite.Database): Connection => {
  // Bounded by the fixed set of SQL texts the stores use; cleared if something generates more.
  const cache = new Map<string, Sqlite.Statement>()
  const prepared = (text: string) => {
    let statement = cache.get(text)
    if (statement === undefined) {
      if (cache.size >= 200) cache.clear()
      statement = db.prepare(text)
      cache.set(text, statement)
    }
    return statement
  }
  const run = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
    if (statement.reader) return statement.all(...params)
    statement.run(...params)
    return []
  }
  return {
    execute: (text, params, transformRows) =>
      Effect.try({
        try: () => {
          const rows = run(prepared(text), params) as ReadonlyArray<object>
          return transformRows === undefined ? rows : transformRows(rows)
        },
        catch: executeFailed
      }),
    executeRaw: (text, params) =>
      Effect.try({
        try: () => {
          const statement = prepared(text)
          return statement.reader ? statement.all(...params) : statement.run(...params)
        },
        catch: executeFailed
      }),
    executeValues: (text, params) =>
      Effect.try({
        try: () => {
          const statement = db.prepare(text)
          return statement.reader ? (statement.raw(true).all(...params) as Array<Array<unknown>>) : []
        },
        catch: executeFailed
      }),
    executeUnprepared: (text, params, transformRows) =>
      Effect.try({
        try: () => {
          const rows = run(db.prepare(text), params) as ReadonlyArray<object>
          return transformRows === undefined ? rows : transformRows(rows)
        },
        catch: executeFailed
      }),
    executeStream: () => {
      throw new Error("executeStream is not supported")
    }
  }
}

/** Same refusal rules as src/store/database.ts (copied: not exported there). */
const legacyCheck = (sql: SqlClient.SqlClient, filename: string) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ name: string }>`
      SELECT name FROM sqlite_master WHERE type = 'table'
      AND name IN ('pi_workflows_metadata', 'workflow_notifications')`
    const names = new Set(tables.map((t) => t.name))
    if (names.has("pi_workflows_metadata")) {
      const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
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

const open = (options: FastDatabaseOptions) =>
  Effect.gen(function* () {
    const cannotOpen = (cause: unknown) =>
      new StoreFailure({
        operation: "open",
        message: `cannot open ${options.filename}: ${String(cause)}`,
        cause
      })
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const handle = new Sqlite(options.filename)
          try {
            handle.pragma("journal_mode = WAL")
          } catch (cause) {
            handle.close()
            throw cause
          }
          return handle
        },
        catch: cannotOpen
      }),
      (handle) => Effect.sync(() => handle.close())
    )
    const connection = makeConnection(db)
    const semaphore = yield* Effect.makeSemaphore(1)
    const sql = yield* SqlClient.make({
      acquirer: semaphore.withPermits(1)(Effect.succeed(connection)),
      transactionAcquirer: Effect.uninterruptibleMask((restore) =>
        Effect.as(
          Effect.zipRight(
            restore(semaphore.take(1)),
            Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
          ),
          connection
        )
      ),
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const immediate: DatabaseService["immediate"] = SqlClient.makeWithTransaction({
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
    yield* Effect.try({
      try: () => {
        db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))}`)
        db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`)
        db.pragma("foreign_keys = ON")
      },
      catch: (cause) => new StoreFailure({ operation: "open", message: String(cause), cause })
    })
    yield* immediate(
      Effect.gen(function* () {
        yield* legacyCheck(sql, options.filename)
        for (const statement of controllerSchemaStatements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ${CONTROLLER_SCHEMA})
          ON CONFLICT (key) DO NOTHING`
      })
    ).pipe(
      Effect.catchTag("SqlError", (e) =>
        Effect.fail(new StoreFailure({ operation: "open", message: String(e.cause ?? e.message), cause: e }))
      )
    )
    const prepare = (text: string): Prepared => {
      const statement = db.prepare(text)
      const viaClient = (
        params: ReadonlyArray<unknown>
      ): Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError> => sql.unsafe(text, params)
      return {
        // Checked when the effect runs, not when it is built.
        all: (params) =>
          Effect.suspend(() =>
            db.inTransaction
              ? viaClient(params)
              : Effect.try({ try: () => statement.all(...params), catch: executeFailed })
          )
      }
    }
    return {
      sql,
      database: { filename: options.filename, immediate } satisfies DatabaseService,
      service: { filename: options.filename, prepare } satisfies FastDatabaseService
    }
  })

/**
 * FastDatabase + Database + SqlClient on one handle: a drop-in for the src Database layer, with
 * the same open-time checks.
 */
export const layer = (
  options: FastDatabaseOptions
): Layer.Layer<FastDatabase | Database | SqlClient.SqlClient, OpenError> =>
  Layer.scopedContext(
    Effect.map(open(options), ({ sql, database, service }) =>
      Context.make(FastDatabase, service).pipe(
        Context.add(Database, database),
        Context.add(SqlClient.SqlClient, sql)
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))
