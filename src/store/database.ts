/**
 * The controller database: one SQLite file in WAL mode shared by every store of this package.
 * Opening it sets the pragmas, refuses incompatible state and migrates the schema (`schema.ts`).
 *
 * The client and its one connection are @effect/sql-sqlite-node's `SqliteClient`; this module
 * adds what it lacks on top of it (docs/store.md):
 * - lock waits that never block the event loop: `busy_timeout = 0` on the connection, and a
 *   statement or transaction that meets another connection's lock (SQLITE_BUSY) is retried on a
 *   `Schedule` within the fiber's lock budget (`withLockBudget`, default `busyTimeoutMs`);
 * - `immediate`: `BEGIN IMMEDIATE … COMMIT` (the client's own transactions begin with `BEGIN`);
 * - the first-open race: two processes creating a new file at once.
 */
import { existsSync } from "node:fs"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import Sqlite from "better-sqlite3"
import { Clock, Context, Duration, Effect, Exit, FiberRef, Layer, Option, Schedule, Scope } from "effect"
import { CONTROLLER_SCHEMA, migrations } from "./schema.ts"
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

export interface DatabaseService {
  readonly filename: string
  /**
   * Run `effect` inside `BEGIN IMMEDIATE … COMMIT`. The write lock is taken up front, so a
   * read-then-write sequence can never fail with SQLITE_BUSY_SNAPSHOT across processes.
   * Nested calls become savepoints of the outer transaction.
   */
  readonly immediate: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
  /**
   * Run `effect` with its statements waiting at most `busyTimeoutMs` for another connection's
   * lock (then SQLITE_BUSY, typed) instead of the database's `busyTimeoutMs`. Optional so that
   * a wrapper or test double may leave it out; absent means no change.
   */
  readonly urgent?: (
    busyTimeoutMs: number
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Run one statement (or statements that each apply alone) outside a transaction, waiting for
   * another connection's lock within the fiber's budget instead of failing at once. Optional:
   * a backend that waits server-side (PostgreSQL's `lock_timeout`) leaves it out. Use
   * `waitingForLocks`.
   */
  readonly lockWait?: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class Database extends Context.Tag("pi-workflow-turns/Database")<Database, DatabaseService>() {
  static readonly layer = (options: DatabaseOptions) => layer(options)
}

export type OpenError = StoreFailure | LegacyLaunchNotifications | IncompatibleStore

// `@internal`: the stores' own helpers, left out of the library's published declarations.

/** @internal `effect` with `database`'s lock wait, when it has one (`DatabaseService.lockWait`). */
export const waitingForLocks =
  (database: DatabaseService) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    database.lockWait === undefined ? effect : database.lockWait(effect)

type LockWait = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
/** @internal `waitingForLocks` of the Database in context, or no wait for a store built without one. */
export const lockWaitInContext: Effect.Effect<LockWait> = Effect.map(
  Effect.serviceOption(Database),
  (database) => (Option.isSome(database) ? waitingForLocks(database.value) : (effect) => effect)
)

/** @internal `immediate`, with an SQL failure (BEGIN, COMMIT, a statement) as this operation's `StoreFailure`. */
export const immediateAs =
  (database: DatabaseService, operation: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    asStoreFailure(operation)(database.immediate(effect))

/** @internal `f` with each call in a span `name` (`RunStore.claim`), to follow a turn in a trace. */
export const traced =
  <Args extends ReadonlyArray<unknown>, A, E, R>(
    name: string,
    f: (...args: Args) => Effect.Effect<A, E, R>
  ) =>
  (...args: Args): Effect.Effect<A, E, R> =>
    Effect.withSpan(f(...args), name)

// --- Lock budgets ----------------------------------------------------------------------------

/**
 * How long (ms) a statement of the current fiber may wait for another connection's lock; null:
 * the database's `busyTimeoutMs`. `urgent` lowers it for the writes an abort must not wait on.
 */
const busyBudget = FiberRef.unsafeMake<number | null>(null)

/** @internal The current fiber's lock budget (ms), null for the database default; other backends honour it too. */
export const currentLockBudget: Effect.Effect<number | null> = FiberRef.get(busyBudget)

/**
 * @internal Run `effect` with its statements waiting at most `ms` for another connection's lock (a
 * fiber-local budget, so it reaches the stores' statements without passing anything).
 */
export const withLockBudget =
  (ms: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(effect, busyBudget, Math.max(0, Math.trunc(ms)))

/** @internal The lock budget of the writes an abort makes (its provenance, its intent): well inside 250 ms. */
export const ABORT_LOCK_BUDGET_MS = 150

const LOCK_CODES: ReadonlySet<unknown> = new Set([
  "SQLITE_BUSY",
  "SQLITE_BUSY_SNAPSHOT",
  "SQLITE_BUSY_RECOVERY",
  "SQLITE_LOCKED"
])

/** A driver error (better-sqlite3's `SqliteError`) whose code says another connection holds a lock. */
const isLockCause = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && LOCK_CODES.has(cause.code)

const isLockError = (error: unknown): boolean =>
  error instanceof SqlError.SqlError ? isLockCause(error.cause) : isLockCause(error)

/** Lock waits are a fact about other processes: measured on the wall clock, even under TestClock. */
const wallClock = Clock.make()
const LOCK_POLL = Duration.millis(5)

/** `effect` again while it meets a lock, for up to `ms`; the effect itself keeps the caller's clock. */
const retryOnLock = <A, E, R>(effect: Effect.Effect<A, E, R>, ms: number): Effect.Effect<A, E, R> =>
  Effect.clockWith((callerClock) =>
    Effect.retry(Effect.withClock(effect, callerClock), {
      while: isLockError,
      schedule: Schedule.spaced(LOCK_POLL).pipe(Schedule.upTo(Duration.millis(Math.max(0, ms))))
    }).pipe(Effect.withClock(wallClock))
  )

/**
 * The lock wait of a database whose default budget is `defaultMs`: on SQLITE_BUSY, retry until
 * the fiber's budget is spent, then the SQLITE_BUSY stays the (typed) result. Never inside a
 * transaction: a statement there is not retried alone (the transaction's BEGIN IMMEDIATE, where
 * the lock is met, is retried with the whole transaction). The happy path costs one `catchIf`.
 */
const makeLockWait =
  (defaultMs: number) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.catchIf(effect, isLockError, (first) =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) =>
        Option.isSome(transaction)
          ? Effect.fail(first)
          : Effect.flatMap(currentLockBudget, (budget) => {
              const ms = budget ?? defaultMs
              return ms <= 0 ? Effect.fail(first) : retryOnLock(effect, ms)
            })
      )
    )

// --- Transactions ----------------------------------------------------------------------------

/**
 * `BEGIN IMMEDIATE … COMMIT` on the client's connection, reserved for the whole body (it takes
 * the client's semaphore, so other fibers' statements wait) and provided as the transaction
 * connection: the body's statements, child fibers and nested `withTransaction` (savepoints) run
 * on it. A failed COMMIT is rolled back and returned typed; a failed ROLLBACK after a failed
 * body keeps the body's failure (SQLite may have rolled back already, e.g. after SQLITE_FULL).
 * Only waiting for the connection and the body itself are interruptible.
 */
const beginImmediate =
  (sql: SqlClient.SqlClient) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* restore(sql.reserve)
          yield* conn.executeUnprepared("BEGIN IMMEDIATE", [], undefined)
          const exit = yield* Effect.exit(
            restore(effect).pipe(Effect.provideService(SqlClient.TransactionConnection, [conn, 0] as const))
          )
          const rollback = Effect.ignore(conn.executeUnprepared("ROLLBACK", [], undefined))
          if (Exit.isFailure(exit)) return yield* Effect.zipRight(rollback, Effect.failCause(exit.cause))
          const commit = yield* Effect.exit(conn.executeUnprepared("COMMIT", [], undefined))
          if (Exit.isFailure(commit)) return yield* Effect.zipRight(rollback, Effect.failCause(commit.cause))
          return exit.value
        })
      )
    ).pipe(Effect.withSpan("Database.immediate", { kind: "client" }))

// --- Open ------------------------------------------------------------------------------------

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

/** @internal Undelivered `launch_failure` rows of the earlier alpha notifications table (0 without one). */
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

/** The schema versions this release knows (`schema.ts`). */
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
 * Switch the file to WAL on a short-lived handle with no busy wait, before the client opens it.
 * The switch needs the file to itself: another process creating a new file at once may hold it,
 * so it is retried asynchronously for up to `busyMs`. The client's connection runs the same
 * switch in `make`, before its `busy_timeout = 0` can apply, with better-sqlite3's default
 * synchronous wait of 5 s; on a file already in WAL (persistent) that switch is a no-op.
 */
const switchToWal = (filename: string, busyMs: number) =>
  Effect.acquireUseRelease(
    Effect.try({ try: () => new Sqlite(filename, { timeout: 0 }), catch: cannotOpen(filename) }),
    (handle) =>
      retryOnLock(
        Effect.try({ try: () => handle.pragma("journal_mode = WAL"), catch: (cause) => cause }),
        busyMs
      ).pipe(Effect.mapError(cannotOpen(filename))),
    (handle) => Effect.sync(() => handle.close())
  )

/**
 * `SqliteClient.make`, typed (better-sqlite3 throws inside it, a defect) and retried while it
 * meets another connection's lock. Each attempt has its own scope, so a failed one leaves no
 * handle open; the one that succeeds lives as long as the caller's scope.
 */
const makeClient = (config: SqliteClient.SqliteClientConfig, busyMs: number) => {
  const attempt = Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const made = yield* Effect.exit(
        restore(Effect.catchAllDefect(Scope.extend(SqliteClient.make(config), scope), Effect.fail))
      )
      if (Exit.isFailure(made)) {
        yield* Scope.close(scope, made)
        return yield* made
      }
      yield* Effect.addFinalizer((exit) => Scope.close(scope, exit))
      return made.value
    })
  )
  return retryOnLock(attempt, busyMs).pipe(Effect.mapError(cannotOpen(config.filename)))
}

const open = (options: DatabaseOptions) =>
  Effect.gen(function* () {
    const { filename } = options
    const readonly = options.readonly === true
    const defaultMs = Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))
    if (readonly && !existsSync(filename)) {
      // The client would report a bare SQLITE_CANTOPEN; say what is wrong.
      return yield* cannotOpen(filename)("the file does not exist")
    }
    if (!readonly) yield* switchToWal(filename, defaultMs)
    // A reader cannot change the journal mode; the writer that created the file set WAL.
    const sql = yield* makeClient({ filename, readonly, disableWAL: readonly }, defaultMs)
    const lockWait = makeLockWait(defaultMs)
    const begin = beginImmediate(sql)
    const immediate: DatabaseService["immediate"] = (effect) =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
        Option.isSome(outer) ? sql.withTransaction(effect) : lockWait(begin(effect))
      )

    // A file at this version is only read (no lock, no DDL); otherwise one BEGIN IMMEDIATE
    // transaction checks again and migrates, so of processes opening a file at once exactly one
    // applies each migration and the others find it recorded.
    const migrate = Effect.gen(function* () {
      const before = compareVersions(KNOWN, yield* recordedVersions)
      if (before._tag === "Current") return yield* markerCheck(sql, filename)
      if (before._tag === "Newer") return yield* newerSchema(filename, KNOWN, before.unknown)
      yield* immediate(
        Effect.gen(function* () {
          const now = compareVersions(KNOWN, yield* recordedVersions)
          if (now._tag === "Current") return yield* markerCheck(sql, filename)
          if (now._tag === "Newer") return yield* newerSchema(filename, KNOWN, now.unknown)
          yield* legacyCheck(sql, filename)
          yield* runMigrator(migrations)
        })
      )
    }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    // SQLite's own busy handler would wait synchronously, blocking the event loop: fail at once
    // and let `lockWait` wait asynchronously (up to the fiber's budget) instead.
    const busyTimeout = sql`PRAGMA busy_timeout = 0`
    const pragmas = Effect.all([
      busyTimeout,
      sql.unsafe(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`),
      sql`PRAGMA foreign_keys = ON`
    ])
    const setup: Effect.Effect<void, OpenError | SqlError.SqlError> = readonly
      ? Effect.zipRight(busyTimeout, schemaCheck(sql, filename))
      : Effect.zipRight(pragmas, migrate)
    yield* setup.pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeFailure("open")(e))))
    const database: DatabaseService = { filename, immediate, urgent: withLockBudget, lockWait }
    return { sql, database }
  })

/** Database, SqliteClient and SqlClient on one file and one connection, schema ready. */
export const layer = (
  options: DatabaseOptions
): Layer.Layer<Database | SqliteClient.SqliteClient | SqlClient.SqlClient, OpenError> =>
  Layer.scopedContext(
    Effect.map(open(options), ({ sql, database }) =>
      Context.make(Database, database).pipe(
        Context.add(SqliteClient.SqliteClient, sql),
        Context.add(SqlClient.SqlClient, sql)
      )
    )
  ).pipe(Layer.provide(Reactivity.layer))
