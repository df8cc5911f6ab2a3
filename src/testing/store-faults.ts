/**
 * Fault injection for the stores of the controller database, for tests of code that must
 * survive a failing database (ours and downstream); nothing here is used at runtime.
 * - `StoreFaults` wraps any `TurnIntentStore`, `RunStoreFaults` any `RunStore`; scripted per
 *   operation, each call can fail with `SQLITE_BUSY` or `SQLITE_READONLY` (as `StoreFailure`),
 *   throw (a defect), or hang (forever, or for a while and then answer). Faults fire a given
 *   number of times or until cleared. `layerSqliteBoth` wraps both stores on one file.
 * - `layerGated(gate)` runs a gate of your own before every store call instead of a script (a
 *   simulated scheduler: a yield point, a per-process fault, a killed process); both `Guard` each call.
 * - Database level, on a real SQLite file: `holdWriteLock` keeps another connection's write
 *   lock, `holdWriteLockInProcess` another process's (real `SQLITE_BUSY` after the busy
 *   budget), and `readOnlyConnection` switches a connection to read-only (real
 *   `SQLITE_READONLY`), all until their scope closes. `holdLockInChildProcess` runs a lock
 *   holder script of your own (another database's lock) in a child process the same way.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as SqlClient from "@effect/sql/SqlClient"
import Sqlite from "better-sqlite3"
import { Context, Duration, Effect, Layer, Ref, type Scope } from "effect"
import { Database, type DatabaseOptions, type OpenError } from "../store/database.ts"
import { RunStore, type RunStoreService } from "../store/run-store.ts"
import * as RunStoreSql from "../store/run-store-sql.ts"
import { StoreFailure } from "../store/store-errors.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../store/turn-intent-store-sql.ts"

export type StoreOperation = keyof TurnIntentStoreService
export type RunStoreOperation = keyof RunStoreService

export type Fault =
  /** Fails with `StoreFailure` carrying SQLite's `SQLITE_BUSY` message; nothing is written. */
  | { readonly _tag: "Busy" }
  /** Fails with `StoreFailure` carrying SQLite's `SQLITE_READONLY` message; nothing is written. */
  | { readonly _tag: "ReadOnly" }
  /** The call throws (a defect, not a typed error); nothing is written. */
  | { readonly _tag: "Throw"; readonly message?: string }
  /** Never answers, or (with `ms`) answers after `ms` (Effect `Clock` time) by running the call. */
  | { readonly _tag: "Hang"; readonly ms?: number }

export const BUSY_MESSAGE = "SqliteError: database is locked (SQLITE_BUSY)"
export const READONLY_MESSAGE = "SqliteError: attempt to write a readonly database (SQLITE_READONLY)"

interface Rule {
  readonly fault: Fault
  /** Calls left before the rule retires; null: until cleared. */
  readonly remaining: number | null
}

export interface FaultsControl<Op extends string> {
  /**
   * Inject `fault` into `operation` (or every operation with `"*"`), for the next `times` calls
   * of it (default: until cleared). A later injection for the same operation replaces it.
   */
  readonly inject: (
    operation: Op | "*",
    fault: Fault,
    options?: { readonly times?: number }
  ) => Effect.Effect<void>
  /** Remove the faults of one operation, or all. Calls already hanging stay hanging. */
  readonly clear: (operation?: Op | "*") => Effect.Effect<void>
  /** Calls per operation so far (faulted or not). */
  readonly calls: Effect.Effect<Readonly<Record<string, number>>>
  /** Faults fired so far, per fault tag. */
  readonly fired: Effect.Effect<Readonly<Partial<Record<Fault["_tag"], number>>>>
}

export type StoreFaultsControl = FaultsControl<StoreOperation>
export type RunStoreFaultsControl = FaultsControl<RunStoreOperation>

export class StoreFaults extends Context.Tag("pi-workflow-turns/StoreFaults")<
  StoreFaults,
  StoreFaultsControl
>() {}

/** The fault script of the wrapped `RunStore`. */
export class RunStoreFaults extends Context.Tag("pi-workflow-turns/RunStoreFaults")<
  RunStoreFaults,
  RunStoreFaultsControl
>() {}

interface State {
  readonly rules: Readonly<Record<string, Rule>>
  readonly calls: Readonly<Record<string, number>>
  readonly fired: Readonly<Partial<Record<Fault["_tag"], number>>>
}

const consume = (state: State, operation: string): [Fault | null, State] => {
  const calls = { ...state.calls, [operation]: (state.calls[operation] ?? 0) + 1 }
  const key = state.rules[operation] !== undefined ? operation : state.rules["*"] !== undefined ? "*" : null
  const rule = key === null ? undefined : state.rules[key]
  if (key === null || rule === undefined) return [null, { ...state, calls }]
  const remaining = rule.remaining === null ? null : rule.remaining - 1
  const rules = { ...state.rules }
  if (remaining !== null && remaining <= 0) delete rules[key]
  else rules[key] = { fault: rule.fault, remaining }
  const fired = { ...state.fired, [rule.fault._tag]: (state.fired[rule.fault._tag] ?? 0) + 1 }
  return [rule.fault, { rules, calls, fired }]
}

export * from "./store-guards.ts"
import { type Guard, guardRunStore, guardTurnIntentStore } from "./store-guards.ts"

/** A fault script over operations `Op`: the guard to wrap calls with, and its control. */
const makeScript = <Op extends string>(): Effect.Effect<{
  readonly guard: Guard<Op>
  readonly control: FaultsControl<Op>
}> =>
  Effect.map(Ref.make<State>({ rules: {}, calls: {}, fired: {} }), (state) => {
    const guard: Guard<Op> =
      (operation) =>
      <A, E>(call: Effect.Effect<A, E>): Effect.Effect<A, E | StoreFailure> =>
        Effect.flatMap(
          Ref.modify(state, (s) => consume(s, operation)),
          (fault): Effect.Effect<A, E | StoreFailure> => {
            if (fault === null) return call
            switch (fault._tag) {
              case "Busy":
                return Effect.fail(new StoreFailure({ operation, reason: "Lock", message: BUSY_MESSAGE }))
              case "ReadOnly":
                return Effect.fail(
                  new StoreFailure({ operation, reason: "ReadOnly", message: READONLY_MESSAGE })
                )
              case "Throw":
                return Effect.sync(() => {
                  throw new Error(fault.message ?? `injected fault: ${operation} threw`)
                })
              case "Hang":
                return fault.ms === undefined
                  ? Effect.never
                  : Effect.zipRight(Effect.sleep(Duration.millis(fault.ms)), call)
            }
          }
        )
    const control: FaultsControl<Op> = {
      inject: (operation, fault, options) =>
        Ref.update(state, (s) => ({
          ...s,
          rules: {
            ...s.rules,
            [operation]: {
              fault,
              remaining: options?.times === undefined ? null : Math.max(1, Math.trunc(options.times))
            }
          }
        })),
      clear: (operation) =>
        Ref.update(state, (s) => {
          if (operation === undefined) return { ...s, rules: {} }
          const rules = { ...s.rules }
          delete rules[operation]
          return { ...s, rules }
        }),
      calls: Effect.map(Ref.get(state), (s) => s.calls),
      fired: Effect.map(Ref.get(state), (s) => s.fired)
    }
    return { guard, control }
  })

/** Wrap `store`; the returned control scripts its faults. */
export const make = (
  store: TurnIntentStoreService
): Effect.Effect<{ readonly store: TurnIntentStoreService; readonly control: StoreFaultsControl }> =>
  Effect.map(makeScript<StoreOperation>(), ({ guard, control }) => ({
    store: guardTurnIntentStore(store, guard),
    control
  }))

/** Wrap a `RunStore`; the returned control scripts its faults. */
export const makeRun = (
  store: RunStoreService
): Effect.Effect<{ readonly store: RunStoreService; readonly control: RunStoreFaultsControl }> =>
  Effect.map(makeScript<RunStoreOperation>(), ({ guard, control }) => ({
    store: guardRunStore(store, guard),
    control
  }))

/** Replace the `TurnIntentStore` in context with a faulty wrapper of it, plus its control. */
export const layer: Layer.Layer<TurnIntentStore | StoreFaults, never, TurnIntentStore> = Layer.effectContext(
  Effect.gen(function* () {
    const { store, control } = yield* make(yield* TurnIntentStore)
    return Context.make(TurnIntentStore, store).pipe(Context.add(StoreFaults, control))
  })
)

/** The SQLite store on `options.filename`, wrapped; its Database and SqlClient are provided too. */
export const layerSqlite = (
  options: DatabaseOptions
): Layer.Layer<TurnIntentStore | StoreFaults | Database | SqlClient.SqlClient, OpenError> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const base = yield* Layer.build(TurnIntentStoreSql.layerSqlite(options))
      const { store, control } = yield* make(Context.get(base, TurnIntentStore))
      return base.pipe(Context.add(TurnIntentStore, store), Context.add(StoreFaults, control))
    })
  )

/** Replace the `RunStore` in context with a faulty wrapper of it, plus its control. */
export const layerRun: Layer.Layer<RunStore | RunStoreFaults, never, RunStore> = Layer.effectContext(
  Effect.gen(function* () {
    const { store, control } = yield* makeRun(yield* RunStore)
    return Context.make(RunStore, store).pipe(Context.add(RunStoreFaults, control))
  })
)

/** Both SQLite stores on `options.filename`, each wrapped, with their Database and SqlClient. */
export const layerSqliteBoth = (
  options: DatabaseOptions
): Layer.Layer<
  TurnIntentStore | StoreFaults | RunStore | RunStoreFaults | Database | SqlClient.SqlClient,
  OpenError
> =>
  Layer.merge(layer, layerRun).pipe(
    Layer.provideMerge(Layer.merge(TurnIntentStoreSql.layer, RunStoreSql.layer)),
    Layer.provideMerge(Database.layer(options))
  )

/**
 * Run `script` in a child Node process (with `argument` as its `process.argv[1]`) that takes a
 * lock and then writes `locked` to stdout; resolves once it has, and fails with a
 * `StoreFailure` named `operation` when the child exits first. When the scope closes the
 * child's stdin ends: the script then releases its lock and exits, and the release waits for it.
 */
export const holdLockInChildProcess = (
  script: string,
  argument: string,
  operation = "holdLockInChildProcess"
): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<ChildProcess, StoreFailure>((resume) => {
      const child = spawn(process.execPath, ["-e", script, argument], { stdio: ["pipe", "pipe", "pipe"] })
      let settled = false
      let errors = ""
      child.stderr.on("data", (chunk: Buffer) => {
        errors += chunk.toString()
      })
      child.stdout.on("data", (chunk: Buffer) => {
        if (!settled && chunk.toString().includes("locked")) {
          settled = true
          resume(Effect.succeed(child))
        }
      })
      // "close", not "exit": by then stderr is read to its end, so the failure says why.
      child.on("close", (code) => {
        if (settled) return
        settled = true
        resume(Effect.fail(new StoreFailure({ operation, message: `lock holder exited ${code}: ${errors}` })))
      })
    }),
    (child) =>
      Effect.async<void>((resume) => {
        if (child.exitCode !== null) return resume(Effect.void)
        child.on("exit", () => resume(Effect.void))
        child.stdin?.end()
      })
  ).pipe(Effect.asVoid)

/** The child of `holdWriteLockInProcess`: BEGIN IMMEDIATE on the file, ROLLBACK when stdin ends. */
const SQLITE_LOCK_HOLDER = [
  'const Sqlite = require("better-sqlite3")',
  "const db = new Sqlite(process.argv[1])",
  'db.exec("BEGIN IMMEDIATE")',
  'process.stdout.write("locked\\n")',
  'process.stdin.on("data", () => {})',
  'process.stdin.on("end", () => { db.exec("ROLLBACK"); db.close(); process.exit(0) })'
].join(";")

/**
 * Hold the database's write lock from a second process (a child Node process that opens the
 * file and runs BEGIN IMMEDIATE) until the scope closes. Resolves once the lock is held.
 */
export const holdWriteLockInProcess = (filename: string): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  holdLockInChildProcess(SQLITE_LOCK_HOLDER, filename, "holdWriteLockInProcess")

/**
 * Hold the database's write lock from another connection until the scope closes: every write
 * of other connections waits its busy timeout and then fails with `SQLITE_BUSY`.
 */
export const holdWriteLock = (filename: string): Effect.Effect<void, StoreFailure, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const db = new Sqlite(filename)
        try {
          db.exec("BEGIN IMMEDIATE")
        } catch (cause) {
          db.close()
          throw cause
        }
        return db
      },
      catch: (cause) => new StoreFailure({ operation: "holdWriteLock", message: String(cause), cause })
    }),
    (db) =>
      Effect.sync(() => {
        db.exec("ROLLBACK")
        db.close()
      })
  )

/**
 * Make the connection behind `SqlClient` read-only until the scope closes: every write through
 * it fails with `SQLITE_READONLY` and changes nothing; reads keep working.
 */
export const readOnlyConnection: Effect.Effect<void, StoreFailure, SqlClient.SqlClient | Scope.Scope> =
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.acquireRelease(sql.unsafe("PRAGMA query_only = 1"), () =>
      sql.unsafe("PRAGMA query_only = 0").pipe(Effect.ignore)
    ).pipe(
      Effect.asVoid,
      Effect.mapError(
        (error) => new StoreFailure({ operation: "readOnlyConnection", message: error.message })
      )
    )
  )
