/**
 * The controller database: one SQLite file in WAL mode shared by every store of this package
 * (turn intents, runs, queue). Opening it sets the pragmas, refuses incompatible state and
 * brings the schema to this release's version (`schema-versions.ts`, `migrations.ts`).
 *
 * The layer owns the better-sqlite3 handle and builds the @effect/sql client over it, so the two
 * access paths below share one connection and one transaction state:
 * - `SqlClient` (and `immediate`): every statement serialised on the connection, joining the
 *   caller's transaction; the general path.
 * - `prepare`: a statement prepared once and stepped directly while no transaction is open on
 *   the connection. better-sqlite3 is synchronous, so such a step cannot interleave with another
 *   fiber's statement; when a transaction is open it goes through the SqlClient instead, which
 *   either joins it (the caller is part of it) or waits for it to end. This skips the per-query
 *   Scope, semaphore, span and cache lookup of the SqlClient (~13 µs, docs/bench.md).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import Sqlite from "better-sqlite3"
import { Context, Effect, Layer, Option, Scope } from "effect"
import { migrations } from "./migrations.ts"
import { CONTROLLER_SCHEMA } from "./schema.ts"
import {
  compareVersions,
  knownVersions,
  newerSchema,
  olderSchema,
  recordedVersions,
  runMigrator
} from "./schema-versions.ts"
import {
  asStoreFailure,
  IncompatibleStore,
  LegacyLaunchNotifications,
  StoreFailure,
  storeFailure
} from "./store-errors.ts"
import {
  executeFailed,
  isBusyError,
  makeConnection,
  retryBusy,
  retryWhileLocked,
  withLockBudget
} from "./sqlite-connection.ts"

/** The lock budget helpers (`sqlite-connection.ts`), part of this module's public surface. */
export { ABORT_LOCK_BUDGET_MS, currentLockBudget, withLockBudget } from "./sqlite-connection.ts"

export interface DatabaseOptions {
  /** Absolute path of the SQLite file (created when missing). */
  readonly filename: string
  /**
   * How long a statement waits for another process's lock before failing with SQLITE_BUSY. The
   * wait is asynchronous (polled), so it never blocks the event loop.
   */
  readonly busyTimeoutMs?: number
  /**
   * `NORMAL` (default) is durable across process crashes in WAL mode and skips one fsync per
   * commit; `FULL` also survives power loss at roughly 100 µs more per write here.
   */
  readonly synchronous?: "NORMAL" | "FULL"
  /**
   * Open for reading only (operator tools): the file must exist and already carry this
   * package's schema. Nothing is created or migrated and no write lock is ever taken, so a
   * live Pi writing to the file is not slowed down.
   */
  readonly readonly?: boolean
}

/** Result rows as arrays of values, in the order of `columns`. */
export interface ValueRows {
  /** The result's column names; the same array object on every call while the shape stays. */
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<unknown>>
}

/** One SQL text prepared on the database's connection. */
export interface PreparedStatement {
  /** Run it with positional parameters; every result row (RETURNING included), undecoded. */
  readonly all: (params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
  /**
   * `all` for a statement that returns rows, each row as its values instead of an object: no
   * object with a property per column is built per row (docs/bench.md). Optional like
   * `Database.prepare`; absent, callers use `all`.
   */
  readonly values?: (params: ReadonlyArray<unknown>) => Effect.Effect<ValueRows, SqlError.SqlError>
  /**
   * `values`, stepped right now when nothing stands in the way: the rows or the driver's error;
   * undefined when it must wait (a transaction is open, another connection holds the lock) and
   * `values` is the way. It runs the statement: call it only while an effect runs. Saves the
   * Effect steps of `values` on the path every store call takes. Optional with `values`.
   */
  readonly valuesNow?: (params: ReadonlyArray<unknown>) => ValueRows | SqlError.SqlError | undefined
}

export interface DatabaseService {
  readonly filename: string
  /**
   * Run `effect` inside `BEGIN IMMEDIATE … COMMIT`. The write lock is taken up front, so a
   * read-then-write sequence can never fail with SQLITE_BUSY_SNAPSHOT across processes.
   * Nested calls become savepoints of the outer transaction.
   */
  readonly immediate: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
  /**
   * The fast path for a fixed SQL text (see the module comment): same results and the same
   * transaction semantics as `sql.unsafe(text, params)`, prepared once, on first use.
   * Optional so that a wrapper or test double may leave it out; callers then use the SqlClient.
   */
  readonly prepare?: (text: string) => PreparedStatement
  /**
   * Run `effect` with its statements waiting at most `busyTimeoutMs` for another connection's
   * lock (then SQLITE_BUSY, typed) instead of the database's `busyTimeoutMs`. Optional like
   * `prepare`; absent means no change.
   */
  readonly urgent?: (
    busyTimeoutMs: number
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class Database extends Context.Tag("pi-workflow-turns/Database")<Database, DatabaseService>() {
  static readonly layer = (options: DatabaseOptions) => layer(options)
}

export type OpenError = StoreFailure | LegacyLaunchNotifications | IncompatibleStore

const isValueRow = (row: unknown): row is ReadonlyArray<unknown> => Array.isArray(row)

const columnNames = (statement: Sqlite.Statement): ReadonlyArray<string> =>
  statement.columns().map((column) => column.name)

/** Object rows (the SqlClient's) as value rows, named by the first row (one result, one shape). */
const objectsAsValues = (rows: ReadonlyArray<Record<string, unknown>>): ValueRows => {
  const columns = rows[0] === undefined ? [] : Object.keys(rows[0])
  return {
    columns,
    // A row with another count keeps its own values: its length tells the decoder.
    rows: rows.map((row) =>
      Object.keys(row).length === columns.length ? columns.map((column) => row[column]) : Object.values(row)
    )
  }
}

/** `immediate`, with an SQL failure (BEGIN, COMMIT, a statement) as this operation's `StoreFailure`. */
export const immediateAs =
  (database: DatabaseService, operation: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    asStoreFailure(operation)(database.immediate(effect))

/** The stores' error mapping (`store-errors.ts`), where the stores have always found it. */
export { storeFailure } from "./store-errors.ts"

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

/** Undelivered `launch_failure` rows of the earlier alpha notifications table (0 without one). */
export const legacyLaunchFailures: Effect.Effect<number, StoreFailure, SqlClient.SqlClient> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    // The alpha table only ever existed in SQLite files.
    if (sql.onDialectOrElse({ pg: () => true, orElse: () => false })) return 0
    const tables = yield* sql<{ name: string }>`
      SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'workflow_notifications'`
    if (tables.length === 0) return 0
    const rows = yield* sql<{ pending: number }>`
      SELECT count(*) AS pending FROM workflow_notifications
      WHERE kind = 'launch_failure' AND delivered_at IS NULL`
    return Number(rows[0]?.pending ?? 0)
  }
).pipe(Effect.mapError(storeFailure("legacyLaunchFailures")))

/** The schema versions this release knows (`migrations.ts`). */
const KNOWN = knownVersions(migrations)

/** The file's schema marker must be this package's (a file at this version has one). */
const markerCheck = (sql: SqlClient.SqlClient, filename: string) =>
  Effect.gen(function* () {
    const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
    const found = rows[0]?.value ?? "(none)"
    if (found !== CONTROLLER_SCHEMA) return yield* new IncompatibleStore({ databasePath: filename, found })
  })

/** A read-only open: the file must be a controller database at exactly this schema version. */
const schemaCheck = (sql: SqlClient.SqlClient, filename: string) =>
  Effect.gen(function* () {
    const tables = yield* sql<{ name: string }>`
      SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'pi_workflows_metadata'`
    if (tables.length === 0) {
      return yield* new StoreFailure({
        operation: "open",
        message: `${filename} is not a pi-workflow-turns database (it has no pi_workflows_metadata table)`
      })
    }
    yield* markerCheck(sql, filename)
    const versions = compareVersions(KNOWN, yield* recordedVersions)
    if (versions._tag === "Newer") return yield* newerSchema(filename, KNOWN, versions.unknown)
    if (versions._tag === "Behind") {
      // Pi refuses such a file and so never upgrades it: the operator tools must still open
      // it, so that `doctor` can say how to reset it.
      if ((yield* legacyLaunchFailures) > 0) return
      return yield* olderSchema(filename, versions.missing)
    }
  }).pipe(Effect.provideService(SqlClient.SqlClient, sql))

const cannotOpen = (filename: string) => (cause: unknown) =>
  new StoreFailure({ operation: "open", message: `cannot open ${filename}: ${String(cause)}`, cause })

/**
 * Open the file in WAL mode, typed (better-sqlite3 throws). The switch needs the file to itself:
 * another process opening a new file at once may hold it (SQLite may say "locked" at once), so
 * it is retried asynchronously for up to `busyMs`, never with SQLite's blocking wait.
 */
const openHandle = (filename: string, readonly: boolean, busyMs: number) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => new Sqlite(filename, { readonly, fileMustExist: readonly, timeout: 0 }),
      catch: cannotOpen(filename)
    }),
    (handle) => Effect.sync(() => handle.close())
  ).pipe(
    // A reader cannot change the journal mode; the writer that created the file set WAL.
    Effect.tap((handle) =>
      readonly
        ? Effect.void
        : Effect.try({ try: () => handle.pragma("journal_mode = WAL"), catch: (cause) => cause }).pipe(
            retryWhileLocked(busyMs),
            Effect.mapError(cannotOpen(filename))
          )
    )
  )

const open = (options: DatabaseOptions) =>
  Effect.gen(function* () {
    const normalBusyMs = Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))
    const db = yield* openHandle(options.filename, options.readonly === true, normalBusyMs)
    const waitForLock = retryBusy(db, normalBusyMs)
    const connection = makeConnection(db, waitForLock)
    // One connection: plain queries hold it for one statement, transactions for their whole body.
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
      spanAttributes: [["db.system.name", "sqlite"]],
      // Every transaction takes the write lock up front (see `immediate`).
      beginTransaction: "BEGIN IMMEDIATE"
    })
    // @effect/sql dies when COMMIT or ROLLBACK fails; the connection above already restored a
    // clean state, so the SqlError is returned as the typed failure it is.
    const immediate: DatabaseService["immediate"] = (effect) =>
      sql
        .withTransaction(effect)
        .pipe(
          Effect.catchSomeDefect((defect) =>
            defect instanceof SqlError.SqlError ? Option.some(Effect.fail(defect)) : Option.none()
          )
        )

    const urgent: NonNullable<DatabaseService["urgent"]> = withLockBudget

    const prepare = (text: string): PreparedStatement => {
      let statement: Sqlite.Statement | undefined
      let valueStatement: Sqlite.Statement | undefined
      let columns: ReadonlyArray<string> = []
      const allRows = (params: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
        statement ??= db.prepare(text)
        return statement.all(...params)
      }
      const valueRows = (params: ReadonlyArray<unknown>): ValueRows => {
        if (valueStatement === undefined) {
          valueStatement = db.prepare(text).raw(true)
          columns = columnNames(valueStatement)
        }
        const rows = valueStatement.all(...params)
        if (!rows.every(isValueRow))
          throw new TypeError("a raw statement returned a row that is not an array")
        // SQLite re-prepares `*` after a schema change: name the columns of the new shape.
        if (rows.length > 0 && rows[0]?.length !== columns.length) columns = columnNames(valueStatement)
        return { columns, rows }
      }
      /** One step now: the result, or the driver's error as an SqlError. */
      const once = <A>(step: () => A): A | SqlError.SqlError => {
        try {
          return step()
        } catch (cause) {
          return executeFailed(cause)
        }
      }
      const retried = <A>(step: () => A): Effect.Effect<A, SqlError.SqlError> =>
        waitForLock(
          Effect.suspend(() => {
            const result = once(step)
            return result instanceof SqlError.SqlError ? Effect.fail(result) : Effect.succeed(result)
          })
        )
      // Decided when the effect runs: an open transaction is another fiber's (the SqlClient
      // waits for it) or the caller's (the SqlClient joins it); never step into it directly.
      // The common case answers synchronously; only a lock wait goes through the retry.
      const run = <A>(step: () => A, viaClient: () => Effect.Effect<A, SqlError.SqlError>) =>
        Effect.suspend((): Effect.Effect<A, SqlError.SqlError> => {
          if (db.inTransaction) return viaClient()
          const result = once(step)
          return !(result instanceof SqlError.SqlError)
            ? Effect.succeed(result)
            : isBusyError(result)
              ? retried(step)
              : Effect.fail(result)
        })
      return {
        all: (params) =>
          run(
            () => allRows(params),
            () => sql.unsafe(text, params)
          ),
        values: (params) =>
          run(
            () => valueRows(params),
            () => Effect.map(sql.unsafe<Record<string, unknown>>(text, params), objectsAsValues)
          ),
        valuesNow: (params) => {
          if (db.inTransaction) return undefined
          const result = once(() => valueRows(params))
          return result instanceof SqlError.SqlError && isBusyError(result) ? undefined : result
        }
      }
    }

    // A file at this version is only read (no lock, no DDL); otherwise one BEGIN IMMEDIATE
    // transaction checks again and migrates, so of processes opening a file at once exactly one
    // applies each migration and the others find it recorded.
    const migrate = Effect.gen(function* () {
      const before = compareVersions(KNOWN, yield* recordedVersions)
      if (before._tag === "Current") return yield* markerCheck(sql, options.filename)
      if (before._tag === "Newer") return yield* newerSchema(options.filename, KNOWN, before.unknown)
      yield* immediate(
        Effect.gen(function* () {
          const now = compareVersions(KNOWN, yield* recordedVersions)
          if (now._tag === "Current") return yield* markerCheck(sql, options.filename)
          if (now._tag === "Newer") return yield* newerSchema(options.filename, KNOWN, now.unknown)
          yield* legacyCheck(sql, options.filename)
          yield* runMigrator(migrations)
        })
      )
    }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    // SQLite's own busy handler would wait synchronously, blocking the event loop: fail at once
    // and let `retryBusy` wait asynchronously (up to `busyTimeoutMs`) instead.
    const busyTimeout = sql.unsafe("PRAGMA busy_timeout = 0")
    const pragmas = Effect.all([
      busyTimeout,
      sql.unsafe(`PRAGMA synchronous = ${options.synchronous ?? "NORMAL"}`),
      sql.unsafe("PRAGMA foreign_keys = ON")
    ])
    const setup: Effect.Effect<void, OpenError | SqlError.SqlError> =
      options.readonly === true
        ? Effect.zipRight(busyTimeout, schemaCheck(sql, options.filename))
        : Effect.zipRight(pragmas, migrate)
    yield* setup.pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeFailure("open")(e))))
    return {
      sql,
      database: { filename: options.filename, immediate, prepare, urgent } satisfies DatabaseService
    }
  })

/** SqlClient + Database on one file and one connection, schema ready. */
export const layer = (options: DatabaseOptions): Layer.Layer<Database | SqlClient.SqlClient, OpenError> =>
  Layer.scopedContext(
    Effect.map(open(options), ({ sql, database }) =>
      Context.make(Database, database).pipe(Context.add(SqlClient.SqlClient, sql))
    )
  ).pipe(Layer.provide(Reactivity.layer))
