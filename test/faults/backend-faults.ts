/**
 * The real (database-level) faults of the fault tests, for the backend this test run exercises
 * (test/support/backend.ts). The scripted faults of `src/testing/store-faults.ts` wrap any store
 * and need nothing from here; these make the database itself misbehave:
 *
 * | fault                     | SQLite                                 | PostgreSQL                                                  |
 * | ------------------------- | -------------------------------------- | ----------------------------------------------------------- |
 * | locked (this process)     | another connection's BEGIN IMMEDIATE   | another session's LOCK TABLE … IN EXCLUSIVE MODE (reads pass) |
 * | locked (another process)  | a child process's BEGIN IMMEDIATE      | a child process's LOCK TABLE … IN ACCESS EXCLUSIVE MODE     |
 * | read-only                 | PRAGMA query_only on the store's connection | the database's default_transaction_read_only, sessions replaced |
 * | connections dropped       | — (an embedded file has no connection to lose) | pg_terminate_backend of the pool's backends, repeatedly |
 * | server unreachable        | — (no server)                          | the socket is gone (proxy stopped): new connections refused |
 * | slow network              | — (no network)                         | every packet delayed (proxy)                                |
 *
 * On PostgreSQL every location from `faultLocation` is routed through its own proxy
 * (test/support/pg-proxy.ts), so the network faults touch only the test that causes them.
 */
import { Context, Effect, Exit, Fiber, Schedule, Scope } from "effect"
import pg from "pg"
import * as SqlClient from "@effect/sql/SqlClient"
import { StoreFailure } from "../../src/store/store-errors.ts"
import {
  holdLockInChildProcess,
  holdWriteLock,
  holdWriteLockInProcess,
  readOnlyConnection
} from "../../src/testing/store-faults.ts"
import { freshPgUrl, isPg, isPgLocation, pgQuery } from "../support/backend.ts"
import { type PgProxy, startPgProxy } from "../support/pg-proxy.ts"
import { tempDbPath } from "../support/temp-db.ts"

/** What a write fails with while another connection holds the lock past the busy budget. */
export const LOCKED = /database is locked|SQLITE_BUSY|lock timeout/i
/** What a write fails with on a read-only database. */
export const READ_ONLY = /readonly|read-only/i

/** The tables every store write touches. */
const TABLES = "workflow_turn_intents, workflow_runs"

const proxies = new Map<string, PgProxy>()

/** A fresh store location of this run's backend; on PostgreSQL behind a proxy of its own. */
export const faultLocation: Effect.Effect<string, never, Scope.Scope> = isPg
  ? Effect.gen(function* () {
      const proxy = yield* startPgProxy(yield* freshPgUrl)
      proxies.set(proxy.url, proxy)
      yield* Effect.addFinalizer(() => Effect.sync(() => proxies.delete(proxy.url)))
      return proxy.url
    })
  : tempDbPath

const proxyOf = (location: string): Effect.Effect<PgProxy, StoreFailure> => {
  const proxy = proxies.get(location)
  return proxy === undefined
    ? Effect.fail(
        new StoreFailure({ operation: "fault", message: `${location} was not made by faultLocation` })
      )
    : Effect.succeed(proxy)
}

const failed = (operation: string) => (cause: unknown) =>
  new StoreFailure({ operation, message: String(cause), cause })

/**
 * Hold the tables' locks on one PostgreSQL session until the scope closes. EXCLUSIVE mode is
 * SQLite's write lock: every write waits (then fails after the busy budget), plain reads pass.
 */
const holdPgLock = (url: string): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        await client.query(`BEGIN; LOCK TABLE ${TABLES} IN EXCLUSIVE MODE`)
        return client
      },
      catch: failed("holdLock")
    }),
    (client) => Effect.promise(() => client.query("ROLLBACK").then(() => client.end()))
  )

/** Another connection of this process holds the write lock (SQLite) or the tables' locks (PostgreSQL). */
export const holdLock = (location: string): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  isPgLocation(location) ? holdPgLock(location) : holdWriteLock(location)

/**
 * A second Node process holds the locks until the scope closes; resolves once they are held.
 * On PostgreSQL in ACCESS EXCLUSIVE mode: harsher than SQLite's write lock, reads wait too.
 */
export const holdLockInProcess = (location: string): Effect.Effect<void, StoreFailure, Scope.Scope> => {
  if (!isPgLocation(location)) return holdWriteLockInProcess(location)
  const script = [
    'const pg = require("pg")',
    "const client = new pg.Client({ connectionString: process.argv[1] })",
    `client.connect().then(() => client.query("BEGIN; LOCK TABLE ${TABLES} IN ACCESS EXCLUSIVE MODE")).then(() => process.stdout.write("locked\\n"))`,
    'process.stdin.on("data", () => {})',
    'process.stdin.on("end", () => client.query("ROLLBACK").then(() => client.end()).then(() => process.exit(0)))'
  ].join(";")
  return holdLockInChildProcess(script, location, "holdLockInProcess")
}

/** The pool connections of the stores on this database (not the caller's own session). */
const TERMINATE = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
  WHERE datname = current_database() AND application_name = 'pi-workflow-turns' AND pid <> pg_backend_pid()`

/** Drop every store connection to `location`'s database now (the server ends the sessions). */
export const dropConnections = (location: string): Effect.Effect<void> =>
  Effect.asVoid(Effect.promise(() => pgQuery(location, TERMINATE)))

const setReadOnly = (location: string, on: boolean) =>
  Effect.promise(async () => {
    const [row] = await pgQuery(location, "SELECT current_database() AS name")
    const name = String((row as { readonly name?: unknown } | undefined)?.name)
    // This session starts read-only too while the fault lasts: switch it back first.
    await pgQuery(
      location,
      on
        ? `ALTER DATABASE "${name}" SET default_transaction_read_only = on`
        : `BEGIN READ WRITE; ALTER DATABASE "${name}" RESET default_transaction_read_only; COMMIT`
    )
    // A session keeps the default it started with: replace them all.
    await pgQuery(location, TERMINATE)
  })

/**
 * The database turns read-only until the scope closes. SQLite: the connection behind the
 * SqlClient of `context` (PRAGMA query_only). PostgreSQL: every new session of the database
 * starts read-only, and the pool's current sessions are replaced.
 */
export const readOnly = (
  location: string,
  context: Context.Context<SqlClient.SqlClient>
): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  isPgLocation(location)
    ? Effect.acquireRelease(setReadOnly(location, true), () => setReadOnly(location, false))
    : readOnlyConnection.pipe(
        Effect.provideService(SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
      )

/** A fault of the database itself: `inject` starts it and returns what heals it. */
export interface RealFault {
  readonly name: string
  readonly inject: (location: string) => Effect.Effect<Effect.Effect<void>, StoreFailure>
}

/** Turn a scoped fault into inject/heal. */
const scopedFault =
  (hold: (location: string) => Effect.Effect<void, StoreFailure, Scope.Scope>) => (location: string) =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      yield* hold(location).pipe(Scope.extend(scope))
      return Scope.close(scope, Exit.void)
    })

/** Sessions keep being dropped (every 50 ms) until healed. */
const droppingConnections = (location: string) =>
  Effect.gen(function* () {
    yield* dropConnections(location)
    const dropping = yield* Effect.forkDaemon(
      Effect.repeat(dropConnections(location), Schedule.spaced("50 millis"))
    )
    return Effect.zipRight(Fiber.interrupt(dropping), POOL_NOTICES)
  })

/**
 * After a network fault heals, a pooled session the server ended is only known to be gone once
 * its socket's end is processed; until then the first statement outside a transaction on it
 * fails (typed; transactions and the prepared fast path retry, docs/postgres.md). Healing waits
 * for that, so the test's "after the fault" starts when the network really is whole again.
 */
const POOL_NOTICES = Effect.sleep("300 millis")

/** The PostgreSQL faults with no SQLite meaning, beside the lock held by another process. */
export const REAL_FAULTS: ReadonlyArray<RealFault> = [
  { name: "locked by another process", inject: scopedFault(holdLockInProcess) },
  ...(isPg
    ? [
        { name: "connections dropped", inject: droppingConnections },
        {
          name: "server unreachable (connection refused)",
          inject: (location: string) =>
            Effect.flatMap(proxyOf(location), (proxy) =>
              Effect.as(proxy.refuse, Effect.zipRight(proxy.heal, POOL_NOTICES))
            )
        },
        {
          name: "slow network (400 ms per packet)",
          inject: (location: string) =>
            Effect.flatMap(proxyOf(location), (proxy) => Effect.as(proxy.slow(400), proxy.heal))
        }
      ]
    : [])
]
