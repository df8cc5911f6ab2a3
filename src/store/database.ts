/**
 * The controller database: one SQLite file in WAL mode shared by every store of this package
 * (turn intents, runs, queue). Opening it sets the pragmas, refuses incompatible state and runs
 * the idempotent schema once.
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
import type { Connection } from "@effect/sql/SqlConnection"
import Sqlite from "better-sqlite3"
import { Clock, Context, Duration, Effect, FiberRef, Layer, Option, Schedule, Scope, Stream } from "effect"
import { IncompatibleStore, LegacyLaunchNotifications, StoreFailure } from "../domain/errors.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "./schema.ts"

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

/** One SQL text prepared on the database's connection. */
export interface PreparedStatement {
  /** Run it with positional parameters; every result row (RETURNING included), undecoded. */
  readonly all: (params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>
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

/** An SQL (or row decoding) error as the stores report it: the driver's own words when it has them. */
export const storeFailure =
  (operation: string) =>
  (error: { readonly cause?: unknown; readonly message: string }): StoreFailure =>
    new StoreFailure({ operation, message: String(error.cause ?? error.message), cause: error })

/** `immediate`, with an SQL failure (BEGIN, COMMIT, a statement) as this operation's `StoreFailure`. */
export const immediateAs =
  (database: DatabaseService, operation: string) =>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, Exclude<E, SqlError.SqlError> | StoreFailure, R> =>
    database.immediate(effect).pipe(
      Effect.catchIf(
        (error): error is SqlError.SqlError => error instanceof SqlError.SqlError,
        (error) => Effect.fail(storeFailure(operation)(error))
      )
    )

const isRow = (row: unknown): row is object => typeof row === "object" && row !== null

const executeFailed = (cause: unknown) =>
  new SqlError.SqlError({ cause, message: "Failed to execute statement" })

/**
 * How long (ms) a statement of the current fiber may wait for another connection's lock; null:
 * the database's `busyTimeoutMs`. `urgent` lowers it for the writes an abort must not wait on.
 */
const busyBudget = FiberRef.unsafeMake<number | null>(null)

/** The current fiber's lock budget (ms), null for the database default; other backends honour it too. */
export const currentLockBudget: Effect.Effect<number | null> = FiberRef.get(busyBudget)

/**
 * Run `effect` with its statements waiting at most `ms` for another connection's lock (a
 * fiber-local budget, so it reaches the stores' statements without passing anything).
 */
export const withLockBudget =
  (ms: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(effect, busyBudget, Math.max(0, Math.trunc(ms)))

/** The lock budget of the writes an abort makes (its provenance, its intent): well inside 250 ms. */
export const ABORT_LOCK_BUDGET_MS = 150

const LOCK_CODES = new Set(["SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY", "SQLITE_LOCKED"])

const isBusyError = (error: SqlError.SqlError): boolean => {
  const cause: unknown = error.cause
  return (
    typeof cause === "object" &&
    cause !== null &&
    "code" in cause &&
    typeof cause.code === "string" &&
    LOCK_CODES.has(cause.code)
  )
}

/** Lock waits are a fact about other processes: measured on the wall clock, even under TestClock. */
const wallClock = Clock.make()
const LOCK_POLL = Duration.millis(5)

/**
 * Retry a statement that found another connection's lock, asynchronously, until the fiber's
 * busy budget is spent; then the SQLITE_BUSY stays the (typed) result. Only outside a
 * transaction: a statement inside one is never retried alone (BEGIN IMMEDIATE, which opens it,
 * is outside and is retried).
 */
const retryBusy =
  (db: Sqlite.Database, defaultBudgetMs: number) =>
  <A>(effect: Effect.Effect<A, SqlError.SqlError>): Effect.Effect<A, SqlError.SqlError> =>
    Effect.flatMap(FiberRef.get(busyBudget), (budget) => {
      const ms = budget ?? defaultBudgetMs
      if (ms <= 0) return effect
      return effect.pipe(
        Effect.retry({
          while: (error) => isBusyError(error) && !db.inTransaction,
          schedule: Schedule.spaced(LOCK_POLL).pipe(Schedule.upTo(Duration.millis(ms)))
        }),
        Effect.withClock(wallClock)
      )
    })

/** Statements the SqlClient runs, by text; bounded like @effect/sql-sqlite-node's cache. */
const PREPARE_CACHE_SIZE = 200

/** The @effect/sql connection over the handle (what @effect/sql-sqlite-node builds, minus its extras). */
const makeConnection = (
  db: Sqlite.Database,
  waitForLock: <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, SqlError.SqlError>
): Connection => {
  const cache = new Map<string, Sqlite.Statement>()
  const prepared = (text: string): Sqlite.Statement => {
    const cached = cache.get(text)
    if (cached !== undefined) {
      // Re-insert: Map order is then least recently used first.
      cache.delete(text)
      cache.set(text, cached)
      return cached
    }
    const statement = db.prepare(text)
    if (cache.size >= PREPARE_CACHE_SIZE) {
      const oldest = cache.keys().next()
      if (oldest.done !== true) cache.delete(oldest.value)
    }
    cache.set(text, statement)
    return statement
  }
  /** Step a statement in the calling fiber, honouring `SqlClient.SafeIntegers` as sql-sqlite-node does. */
  const step = <A>(
    statement: () => Sqlite.Statement,
    use: (statement: Sqlite.Statement) => A
  ): Effect.Effect<A, SqlError.SqlError> =>
    waitForLock(
      Effect.withFiberRuntime((fiber) => {
        try {
          const s = statement()
          s.safeIntegers(Context.get(fiber.currentContext, SqlClient.SafeIntegers))
          return Effect.succeed(use(s))
        } catch (cause) {
          return Effect.fail(executeFailed(cause))
        }
      })
    )
  type Transform = (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  const rows =
    (params: ReadonlyArray<unknown>, transformRows: Transform) =>
    (s: Sqlite.Statement): ReadonlyArray<object> => {
      if (!s.reader) {
        s.run(...params)
        return []
      }
      const found = s.all(...params).filter(isRow)
      return transformRows === undefined ? found : transformRows(found)
    }
  const values =
    (params: ReadonlyArray<unknown>) =>
    (s: Sqlite.Statement): ReadonlyArray<ReadonlyArray<unknown>> => {
      if (!s.reader) {
        s.run(...params)
        return []
      }
      return s
        .raw(true)
        .all(...params)
        .filter((row) => Array.isArray(row))
    }
  return {
    execute: (text, params, transformRows) => step(() => prepared(text), rows(params, transformRows)),
    executeRaw: (text, params) =>
      step(
        () => prepared(text),
        (s): unknown => (s.reader ? s.all(...params) : s.run(...params))
      ),
    // A fresh statement: switching a cached one to raw mode would leak into its other users.
    executeValues: (text, params) => step(() => db.prepare(text), values(params)),
    executeUnprepared: (text, params, transformRows) => {
      // After a BEGIN IMMEDIATE that failed there is nothing to roll back: not a second error.
      if (text === "ROLLBACK" && !db.inTransaction) return Effect.succeed([])
      const run = step(() => db.prepare(text), rows(params, transformRows))
      if (text !== "COMMIT") return run
      // A failed COMMIT would leave the transaction open on the only connection: roll it back.
      return Effect.tapError(run, () =>
        Effect.sync(() => {
          if (db.inTransaction) db.exec("ROLLBACK")
        })
      )
    },
    executeStream: () => Stream.dieMessage("executeStream is not supported on the controller database")
  }
}

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

/** A read-only open: the file must be a controller database of this schema version. */
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
    const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
    const found = rows[0]?.value ?? "(none)"
    if (found !== CONTROLLER_SCHEMA) return yield* new IncompatibleStore({ databasePath: filename, found })
  })

/** Open the file in WAL mode; better-sqlite3 throws (missing directory, not a database): keep it typed. */
const openHandle = (filename: string, readonly: boolean) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const handle = new Sqlite(filename, { readonly, fileMustExist: readonly })
        // A reader cannot change the journal mode; the writer that created the file set WAL.
        if (readonly) return handle
        try {
          handle.pragma("journal_mode = WAL")
        } catch (cause) {
          handle.close()
          throw cause
        }
        return handle
      },
      catch: (cause) =>
        new StoreFailure({ operation: "open", message: `cannot open ${filename}: ${String(cause)}`, cause })
    }),
    (handle) => Effect.sync(() => handle.close())
  )

const open = (options: DatabaseOptions) =>
  Effect.gen(function* () {
    const db = yield* openHandle(options.filename, options.readonly === true)
    const normalBusyMs = Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))
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
      const once = (
        params: ReadonlyArray<unknown>
      ): Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError> => {
        try {
          statement ??= db.prepare(text)
          return Effect.succeed(statement.all(...params))
        } catch (cause) {
          return Effect.fail(executeFailed(cause))
        }
      }
      const direct = (params: ReadonlyArray<unknown>) => {
        const first = once(params)
        // The common case answers synchronously; only a lock wait goes through the retry.
        return Effect.catchIf(first, isBusyError, () => waitForLock(Effect.suspend(() => once(params))))
      }
      return {
        // Decided when the effect runs: an open transaction is another fiber's (the SqlClient
        // waits for it) or the caller's (the SqlClient joins it); never step into it directly.
        all: (params) => Effect.suspend(() => (db.inTransaction ? sql.unsafe(text, params) : direct(params)))
      }
    }

    const migrate = immediate(
      Effect.gen(function* () {
        yield* legacyCheck(sql, options.filename)
        for (const statement of controllerSchemaStatements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ${CONTROLLER_SCHEMA})
          ON CONFLICT (key) DO NOTHING`
      })
    )
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
