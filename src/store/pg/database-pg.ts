/**
 * The controller database on PostgreSQL: the same `Database` + `SqlClient` services the SQLite
 * layer provides, so the stores run the same operations against a server several machines share.
 *
 * - Connection: @effect/sql-pg's `PgClient.make` (its `pg` pool, spans, interruption that
 *   cancels the statement). int8 values (epoch-millisecond columns, `count(*)`) are parsed to JS
 *   numbers, as SQLite returns them; every one of them is far below 2^53.
 * - `immediate`: one transaction at SERIALIZABLE isolation. SQLite's BEGIN IMMEDIATE serialises
 *   writers with a file lock; PostgreSQL gives the same outcome (every transaction behaves as if
 *   it ran alone) by aborting one of two conflicting transactions with a serialization failure,
 *   which is retried here from the start, within the fiber's lock budget (`withLockBudget`,
 *   default `busyTimeoutMs`). A nested call is a savepoint of the outer transaction.
 * - Lock waits: every connection starts with `lock_timeout = busyTimeoutMs`, so a statement
 *   waiting for another session's lock (a table or row lock held elsewhere) fails typed after
 *   the budget, as SQLite's busy timeout does; inside a transaction a fiber's `withLockBudget`
 *   lowers it (`SET LOCAL`, in the round trip that sets the isolation level).
 * - Every other wait is bounded too (`pg-timeouts.ts`, from `TimingPolicy`): a statement the
 *   server runs too long (`statement_timeout`), a transaction left idle by a stopped process
 *   (`idle_in_transaction_session_timeout`), and an answer that never arrives over a stalled
 *   connection (the client's `query_timeout`). All of them ride on the connection URL, so every
 *   connection the client's pool opens starts with them.
 * - Schema: @effect/sql's Migrator (`schema-pg.ts`), under an advisory lock so two processes
 *   opening a new database at once do not race; a database at this version is only read, one
 *   of a newer release refused (`../schema-versions.ts`).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import pg from "pg"
import { reasonOf } from "../failure-reason.ts"
import { IncompatibleStore, StoreFailure, storeFailure } from "../store-errors.ts"
import {
  currentLockBudget,
  Database,
  type DatabaseService,
  type OpenError,
  withLockBudget
} from "../database.ts"
import { CONTROLLER_SCHEMA } from "../schema.ts"
import { DEFAULT_LOCK_BUDGET_MS } from "../../domain/timing-policy.ts"
import { compareVersions, newerSchema, recordedVersions, runMigrator } from "../schema-versions.ts"
import { isConnectionFailure, isSerializationFailure, isUnsent } from "./pg-failures.ts"
import { sessionTimeouts, sessionUrl } from "./pg-timeouts.ts"
import { checkSchema, readOnlyUrl } from "./readonly-pg.ts"
import { KNOWN_PG, migrations } from "./schema-pg.ts"

export interface PgDatabaseOptions {
  /** `postgres://…` or `postgresql://…` (libpq style; `?host=/dir` for a unix socket). */
  readonly url: string
  /** How long a transaction may keep retrying serialization failures (default 5,000 ms). */
  readonly busyTimeoutMs?: number
  /** Pool size (default 10). */
  readonly maxConnections?: number
  /** How long opening may wait for the server (default 5,000 ms). */
  readonly connectTimeoutMs?: number
  /**
   * Open for reading only (operator tools): no migration, the schema version must match, and
   * every transaction is read-only (`readonly-pg.ts`).
   */
  readonly readonly?: boolean
}

/** The URL without its password: what messages and `Database.filename` show. */
export const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(unparseable PostgreSQL URL)"
  }
}

/** int8 → number; everything else as `pg` parses it. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 && format !== "binary"
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? "text")) as pg.CustomTypesConfig["getTypeParser"]
}

/** Waits between transaction retries are a fact about other clients: wall clock, even under TestClock. */
const wallClock = Clock.make()

/** How the pool's sessions show in `pg_stat_activity`. */
const APPLICATION_NAME = "pi-workflow-turns"

/** Arbitrary but fixed: the advisory lock key that serialises schema migrations. */
const MIGRATION_LOCK = 7_240_117_017

const open = (options: PgDatabaseOptions) =>
  Effect.gen(function* () {
    const shown = redactUrl(options.url)
    const connectFailed = (error: { readonly cause?: unknown; readonly message: string }) =>
      new StoreFailure({
        operation: "open",
        reason: reasonOf(error),
        message: `cannot connect to PostgreSQL at ${shown}: ${String(error.cause ?? error.message)}`,
        cause: error
      })
    const defaultBudgetMs = Math.max(0, Math.trunc(options.busyTimeoutMs ?? DEFAULT_LOCK_BUDGET_MS))
    const timeouts = yield* sessionTimeouts(defaultBudgetMs)
    const url = yield* Effect.try({
      try: () => sessionUrl(options.url, timeouts),
      catch: (cause) =>
        new StoreFailure({ operation: "open", message: `not a PostgreSQL URL: ${shown}`, cause })
    })
    const sql = yield* PgClient.make({
      url: Redacted.make(options.readonly === true ? readOnlyUrl(url) : url),
      types,
      maxConnections: options.maxConnections ?? 10,
      connectTimeout: Duration.millis(options.connectTimeoutMs ?? 5_000),
      applicationName: APPLICATION_NAME
    }).pipe(Effect.mapError(connectFailed))

    /** `effect` again while `retryable` holds, within the fiber's lock budget (waits on the wall clock). */
    const retrying = <A, E, R>(effect: Effect.Effect<A, E, R>, retryable: (error: unknown) => boolean) =>
      Effect.flatMap(currentLockBudget, (budget) =>
        Effect.clockWith((callerClock) =>
          // The body keeps the caller's clock (TestClock in tests); only the waits are real.
          Effect.retry(Effect.withClock(effect, callerClock), {
            while: retryable,
            schedule: Schedule.exponential(Duration.millis(2)).pipe(
              Schedule.jittered,
              Schedule.upTo(Duration.millis(budget ?? defaultBudgetMs))
            )
          }).pipe(Effect.withClock(wallClock))
        )
      )

    /** Failures of an attempt whose body had finished: COMMIT was under way, its outcome unknown. */
    const atCommit = new WeakSet<object>()

    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>, budget: number | null) =>
      Effect.suspend(() => {
        let bodyDone = false
        return sql
          .withTransaction(
            Effect.zipRight(
              sql.unsafe(
                budget === null
                  ? "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"
                  : `SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = ${Math.max(1, budget)}`
              ),
              Effect.tap(effect, () => {
                bodyDone = true
              })
            )
          )
          .pipe(
            // @effect/sql dies when COMMIT fails (a serialization failure may surface there): the
            // transaction is gone either way, so it is the typed failure it is.
            Effect.catchSomeDefect((defect) =>
              defect instanceof SqlError.SqlError ? Option.some(Effect.fail(defect)) : Option.none()
            ),
            Effect.tapError((error) =>
              Effect.sync(() => {
                if (bodyDone && typeof error === "object" && error !== null) atCommit.add(error)
              })
            )
          )
      })

    /**
     * Run again after a serialization failure, or after a lost connection that cannot have
     * committed anything (the body had not finished): pg-failures.ts.
     */
    const retryableTransaction = (error: unknown): boolean =>
      isSerializationFailure(error) ||
      (isConnectionFailure(error) && !(typeof error === "object" && error !== null && atCommit.has(error)))

    const immediate: DatabaseService["immediate"] = (effect) =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
        Option.isSome(outer)
          ? sql.withTransaction(effect)
          : Effect.flatMap(currentLockBudget, (budget) =>
              retrying(transaction(effect, budget), retryableTransaction)
            )
      )

    // Outside a transaction, a statement that never reached the server is sent again (a pooled
    // session the server ended is only known to be gone once its socket's end is processed).
    const lockWait: NonNullable<DatabaseService["lockWait"]> = (effect) =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (transaction) =>
        Option.isSome(transaction) ? effect : retrying(effect, isUnsent)
      )

    // A database at this version is only read; otherwise the versions are read again under the
    // advisory lock, so of processes opening a new database at once one migrates it.
    const gate = Effect.flatMap(recordedVersions, (recorded) => {
      const versions = compareVersions(KNOWN_PG, recorded)
      return versions._tag === "Newer"
        ? Effect.fail(newerSchema(shown, KNOWN_PG, versions.unknown))
        : Effect.succeed(versions._tag === "Current")
    })
    const migrateUnderLock = Effect.gen(function* () {
      const lock = yield* sql.reserve
      yield* Effect.acquireRelease(lock.executeRaw("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]), () =>
        Effect.ignore(lock.executeRaw("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]))
      )
      if (yield* gate) return
      yield* runMigrator(migrations)
    }).pipe(Effect.scoped)
    const migrate = Effect.gen(function* () {
      if (!(yield* gate)) yield* migrateUnderLock
      const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
      const found = rows[0]?.value ?? "(none)"
      if (found !== CONTROLLER_SCHEMA) return yield* new IncompatibleStore({ databasePath: shown, found })
    }).pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.catchTag("SqlError", (error) => Effect.fail(storeFailure("open")(error)))
    )
    yield* options.readonly === true ? checkSchema(sql, shown) : migrate
    return {
      sql,
      database: { filename: shown, immediate, urgent: withLockBudget, lockWait } satisfies DatabaseService
    }
  })

/** SqlClient + Database on one PostgreSQL database, schema ready. */
export const layer = (options: PgDatabaseOptions): Layer.Layer<Database | SqlClient.SqlClient, OpenError> =>
  Layer.scopedContext(
    Effect.map(open(options), ({ sql, database }) =>
      Context.make(Database, database).pipe(Context.add(SqlClient.SqlClient, sql))
    )
  ).pipe(Layer.provide(Reactivity.layer))
