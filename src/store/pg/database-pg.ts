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
 * - Every other wait is bounded too (from `TimingPolicy`, below): a statement the
 *   server runs too long (`statement_timeout`), a transaction left idle by a stopped process
 *   (`idle_in_transaction_session_timeout`), and an answer that never arrives over a stalled
 *   connection (the client's `query_timeout`). All of them ride on the connection URL, so every
 *   connection the client's pool opens starts with them.
 * - Schema: @effect/sql's Migrator (`schema-pg.ts`), under an advisory lock so two processes
 *   opening a new database at once do not race; a database at this version is only read, one
 *   of a newer release refused (`../schema.ts`).
 *
 * The four stores on PostgreSQL (`layerStoresPg`) are the SQL stores' own logic (`../*-sql.ts`)
 * over this `Database` + `SqlClient`: every statement they issue is portable SQL or translated
 * here, every multi-statement change runs in one SERIALIZABLE transaction, and every claim
 * locks the rows it takes. So both backends share one definition of each operation's semantics
 * and one set of tests.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlError from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import pg from "pg"
import {
  DEFAULT_LOCK_BUDGET_MS,
  pgClientMargin,
  pgDefaultTimeout,
  TimingPolicy,
  toMillis
} from "../../domain/timing-policy.ts"
import {
  currentLockBudget,
  Database,
  type DatabaseService,
  type OpenError,
  withLockBudget
} from "../database.ts"
import * as LaunchStoreSql from "../launch-store-sql.ts"
import type { LaunchStore } from "../launch-store.ts"
import * as NotificationStoreSql from "../notification-store-sql.ts"
import type { NotificationStore } from "../notification-store.ts"
import * as RunStoreSql from "../run-store-sql.ts"
import type { RunStore } from "../run-store.ts"
import * as StepReminderStoreSql from "../step-reminder-store-sql.ts"
import type { StepReminderStore } from "../step-reminder-store.ts"
import { CONTROLLER_SCHEMA } from "../schema.ts"
import {
  compareVersions,
  newerSchema,
  olderSchema,
  recordedVersions,
  runMigrator
} from "../schema-versions.ts"
import {
  IncompatibleStore,
  isConnectionFailure,
  isSerializationFailure,
  isUnsent,
  reasonOf,
  StoreFailure,
  storeFailure
} from "../store-errors.ts"
import * as TurnIntentStoreSql from "../turn-intent-store-sql.ts"
import type { TurnIntentStore } from "../turn-intent-store.ts"
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
   * every transaction is read-only (`readOnlyUrl`).
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
     * committed anything (the body had not finished): `isUnsent` in ../store-errors.ts.
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

// --- Session bounds ----------------------------------------------------------------------------------
// The server- and client-side bounds every PostgreSQL session of the stores starts with, from
// `TimingPolicy` (`src/domain/timing-policy.ts`) and the connection's lock budget:
//
// - `lock_timeout` = the lock budget: a lock wait fails as a lock failure (SQLSTATE 55P03);
// - `statement_timeout`: a statement the server runs longer is cancelled (57014);
// - `idle_in_transaction_session_timeout`: a session idle inside a transaction (its process
//   stopped or frozen) is ended by the server, which rolls it back and releases its locks (25P03);
// - the client's `query_timeout`, a little past the statement timeout: over a stalled connection
//   no answer (not even the server's cancellation) arrives, so the client stops waiting itself.
//
// All four travel in the connection URL (`sessionUrl`): the server's as `-c` startup options,
// `query_timeout` as a parameter `pg` reads from the URL for each client of the pool.

export interface SessionTimeouts {
  readonly lockMs: number
  readonly statementMs: number
  readonly idleInTransactionMs: number
  readonly clientMs: number
}

/** The policy's timeouts for a connection with lock budget `lockBudgetMs`; a statement bound not above it is refused. */
export const sessionTimeouts = (lockBudgetMs: number): Effect.Effect<SessionTimeouts, StoreFailure> =>
  Effect.gen(function* () {
    const policy = yield* TimingPolicy
    // 0 would mean "no limit" to PostgreSQL: a zero budget is the shortest wait instead.
    const lockMs = Math.max(1, lockBudgetMs)
    const derived = pgDefaultTimeout(lockMs)
    const statementMs =
      policy.pgStatementTimeout === null ? derived : Math.max(1, toMillis(policy.pgStatementTimeout))
    const idleInTransactionMs =
      policy.pgIdleInTransactionTimeout === null
        ? derived
        : Math.max(1, toMillis(policy.pgIdleInTransactionTimeout))
    if (statementMs <= lockMs) {
      return yield* new StoreFailure({
        operation: "open",
        message:
          `TimingPolicy.pgStatementTimeout (${Duration.format(Duration.millis(statementMs))}) must exceed ` +
          `the lock budget busyTimeoutMs (${lockMs} ms), or lock waits would end as statement timeouts`
      })
    }
    return { lockMs, statementMs, idleInTransactionMs, clientMs: statementMs + pgClientMargin(statementMs) }
  })

/** `url` with `option` (e.g. `-c name=value`) added to its connection `options`. */
export const withConnectionOption = (url: string, option: string): string => {
  const parsed = new URL(url)
  const options = parsed.searchParams.get("options")
  parsed.searchParams.set("options", options === null || options === "" ? option : `${options} ${option}`)
  return parsed.toString()
}

/** `url` with every bound of `timeouts` set for each session the client opens (throws on a bad URL). */
export const sessionUrl = (url: string, timeouts: SessionTimeouts): string => {
  const parsed = new URL(
    withConnectionOption(
      url,
      [
        `-c lock_timeout=${timeouts.lockMs}`,
        `-c statement_timeout=${timeouts.statementMs}`,
        `-c idle_in_transaction_session_timeout=${timeouts.idleInTransactionMs}`
      ].join(" ")
    )
  )
  parsed.searchParams.set("query_timeout", String(timeouts.clientMs))
  return parsed.toString()
}

// --- Read-only open ----------------------------------------------------------------------------------
// Opening a PostgreSQL controller database for reading only (the operator CLI): every
// transaction on the pool's connections is read-only (`default_transaction_read_only`, set at
// connection start through the URL's `options`), nothing is created or migrated, and the
// database must be at exactly this release's schema version (`../schema.ts`).

/** `url` with `-c default_transaction_read_only=on` added to its connection `options`. */
export const readOnlyUrl = (url: string): string =>
  withConnectionOption(url, "-c default_transaction_read_only=on")

/** The database must be a controller database of this schema version (nothing is created). */
export const checkSchema = (sql: SqlClient.SqlClient, shown: string) =>
  Effect.gen(function* () {
    // to_regclass follows the connection's search_path, as the stores' statements do.
    const tables = yield* sql<{
      found: string | null
    }>`SELECT to_regclass('pi_workflows_metadata')::text AS found`
    if ((tables[0]?.found ?? null) === null) {
      return yield* new StoreFailure({
        operation: "open",
        message: `${shown} is not a pi-workflow-turns database (it has no pi_workflows_metadata table)`
      })
    }
    const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
    const found = rows[0]?.value ?? "(none)"
    if (found !== CONTROLLER_SCHEMA) return yield* new IncompatibleStore({ databasePath: shown, found })
    const versions = compareVersions(KNOWN_PG, yield* recordedVersions)
    if (versions._tag === "Newer") return yield* newerSchema(shown, KNOWN_PG, versions.unknown)
    if (versions._tag === "Behind") return yield* olderSchema(shown, versions.missing)
  }).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.catchTag("SqlError", (error) => Effect.fail(storeFailure("open")(error)))
  )

// --- The stores on PostgreSQL ----------------------------------------------------------------------

type WithDatabase<S> = Layer.Layer<S | Database | SqlClient.SqlClient, OpenError>

export const layerTurnIntentStorePg = (options: PgDatabaseOptions): WithDatabase<TurnIntentStore> =>
  TurnIntentStoreSql.layer.pipe(Layer.provideMerge(layer(options)))

export const layerRunStorePg = (options: PgDatabaseOptions): WithDatabase<RunStore> =>
  RunStoreSql.layer.pipe(Layer.provideMerge(layer(options)))

export const layerNotificationStorePg = (options: PgDatabaseOptions): WithDatabase<NotificationStore> =>
  NotificationStoreSql.layer.pipe(Layer.provideMerge(layer(options)))

/** All four stores on one pool. */
export const layerStoresPg = (
  options: PgDatabaseOptions
): WithDatabase<TurnIntentStore | RunStore | NotificationStore | LaunchStore | StepReminderStore> =>
  Layer.mergeAll(
    TurnIntentStoreSql.layer,
    RunStoreSql.layer,
    NotificationStoreSql.layer,
    LaunchStoreSql.layer,
    StepReminderStoreSql.layer
  ).pipe(Layer.provideMerge(layer(options)))
