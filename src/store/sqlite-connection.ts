/**
 * The controller database's one better-sqlite3 connection as @effect/sql sees it, and its lock
 * waits: SQLite's own busy handler would block the event loop, so a statement that meets
 * another connection's lock fails at once and is retried here, asynchronously, within the
 * fiber's lock budget (`withLockBudget`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import type { Connection } from "@effect/sql/SqlConnection"
import { Clock, Context, Duration, Effect, FiberRef, Schedule, Stream } from "effect"

/**
 * What this module uses of a better-sqlite3 statement and database. Structural on purpose: the
 * library's published declarations then do not name the driver's types, which a downstream
 * strict project without @types/better-sqlite3 could not resolve.
 */
export interface DriverStatement {
  readonly reader: boolean
  safeIntegers(toggle?: boolean): this
  raw(toggle?: boolean): this
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  run(...params: ReadonlyArray<unknown>): unknown
}

export interface DriverDatabase {
  readonly inTransaction: boolean
  prepare(text: string): DriverStatement
  exec(text: string): unknown
}

const isRow = (row: unknown): row is object => typeof row === "object" && row !== null

export const executeFailed = (cause: unknown) =>
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

/** A driver error (better-sqlite3's `SqliteError`) saying another connection holds a lock. */
export const isLockCause = (cause: unknown): boolean =>
  typeof cause === "object" &&
  cause !== null &&
  "code" in cause &&
  typeof cause.code === "string" &&
  LOCK_CODES.has(cause.code)

export const isBusyError = (error: SqlError.SqlError): boolean => isLockCause(error.cause)

/** Lock waits are a fact about other processes: measured on the wall clock, even under TestClock. */
const wallClock = Clock.make()
const LOCK_POLL = Duration.millis(5)

/**
 * Retry a driver call that met another connection's lock, asynchronously, for up to `ms` (the
 * open's journal-mode switch, before any SqlClient exists).
 */
export const retryWhileLocked =
  (ms: number) =>
  <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    effect.pipe(
      Effect.retry({
        while: isLockCause,
        schedule: Schedule.spaced(LOCK_POLL).pipe(Schedule.upTo(Duration.millis(Math.max(0, ms))))
      }),
      Effect.withClock(wallClock)
    )

/**
 * Retry a statement that found another connection's lock, asynchronously, until the fiber's
 * busy budget is spent; then the SQLITE_BUSY stays the (typed) result. Only outside a
 * transaction: a statement inside one is never retried alone (BEGIN IMMEDIATE, which opens it,
 * is outside and is retried).
 */
export const retryBusy =
  (db: DriverDatabase, defaultBudgetMs: number) =>
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
export const makeConnection = (
  db: DriverDatabase,
  waitForLock: <A>(effect: Effect.Effect<A, SqlError.SqlError>) => Effect.Effect<A, SqlError.SqlError>
): Connection => {
  const cache = new Map<string, DriverStatement>()
  const prepared = (text: string): DriverStatement => {
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
    statement: () => DriverStatement,
    use: (statement: DriverStatement) => A
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
    (s: DriverStatement): ReadonlyArray<object> => {
      if (!s.reader) {
        s.run(...params)
        return []
      }
      const found = s.all(...params).filter(isRow)
      return transformRows === undefined ? found : transformRows(found)
    }
  const values =
    (params: ReadonlyArray<unknown>) =>
    (s: DriverStatement): ReadonlyArray<ReadonlyArray<unknown>> => {
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
