/**
 * One transaction path for the stores: every `immediate` is BEGIN IMMEDIATE, and a transaction
 * that cannot start (another process holds the write lock, the file is read-only) or cannot
 * commit fails with a typed StoreFailure and leaves the connection usable — never a defect.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { Cause, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { Database } from "../../src/store/database.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { layerSqlite } from "../../src/store/run-store-sql.ts"
import { holdWriteLock, readOnlyConnection } from "../../src/testing/store-faults.ts"
import { tempDbPath } from "../support/temp-db.ts"

const newRun = (runId: string) => ({
  runId,
  workflowName: "w",
  workflowRef: "w",
  revision: null,
  sourceFingerprint: "f",
  snapshot: {},
  targetSessionId: "s1",
  origin: "tool" as const,
  input: {},
  startAt: "a",
  maxSteps: 5
})

const open = (filename: string) =>
  Effect.map(Layer.build(layerSqlite({ filename, busyTimeoutMs: 20 })), (context) => ({
    store: Context.get(context, RunStore),
    db: Context.get(context, Database),
    sql: Context.get(context, SqlClient.SqlClient),
    context
  }))

describe("transactions under a foreign write lock", () => {
  it.scoped("cancel, claim and reserve fail with StoreFailure (no defect) and change nothing", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const { store } = yield* open(filename)
      yield* store.reserve(newRun("r1"))
      const lock = yield* Scope.make()
      yield* holdWriteLock(filename).pipe(Scope.extend(lock))
      for (const attempt of [
        store.cancel("r1", "agent"),
        store.claim({ runId: "r1", token: "t", leaseMs: 1_000, mode: "activate" }),
        store.reserve(newRun("r2")),
        store.requestPause("r1")
      ] as const) {
        const exit = yield* Effect.exit(attempt as Effect.Effect<unknown, unknown>)
        expect(Exit.isFailure(exit)).toBe(true)
        if (Exit.isFailure(exit)) {
          expect(Cause.isDie(exit.cause)).toBe(false)
          const error = Cause.failureOption(exit.cause)
          expect(Option.map(error, (e) => (e as { _tag: string })._tag)).toEqual(Option.some("StoreFailure"))
        }
      }
      yield* Scope.close(lock, Exit.void)
      // The connection is clean: the same calls now succeed.
      const cancelled = yield* store.cancel("r1", "agent")
      expect(cancelled._tag).toBe("Cancelled")
    })
  )

  it.scoped("a read-only connection fails writes typed and keeps reads working", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const { store, context } = yield* open(filename)
      yield* store.reserve(newRun("r1"))
      const ro = yield* Scope.make()
      yield* readOnlyConnection.pipe(Effect.provide(context), Scope.extend(ro))
      const failure = yield* Effect.flip(store.cancel("r1", "user"))
      expect(failure._tag).toBe("StoreFailure")
      expect(Option.isSome(yield* store.get("r1"))).toBe(true)
      yield* Scope.close(ro, Exit.void)
      expect((yield* store.cancel("r1", "user"))._tag).toBe("Cancelled")
    })
  )

  it.scoped("every immediate transaction takes the write lock up front (BEGIN IMMEDIATE)", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const { db, sql } = yield* open(filename)
      // A `Database.immediate` transaction holds the write lock before its first write: another
      // connection cannot start writing while it is open, even though it only read so far.
      // (A raw connection: a store's effects run inside the transaction would join it.) The
      // client's own `withTransaction` begins with a plain BEGIN (@effect/sql-sqlite-node); the
      // stores take every transaction through `immediate`.
      const seen = yield* db.immediate(
        Effect.gen(function* () {
          yield* sql`SELECT 1`
          const other = new BetterSqlite(filename)
          try {
            other.pragma("busy_timeout = 0")
            other.exec("BEGIN IMMEDIATE")
            other.exec("ROLLBACK")
            return "other writer got the lock"
          } catch (error) {
            return String(error)
          } finally {
            other.close()
          }
        })
      )
      expect(seen).toMatch(/database is locked/)
      const nested = yield* db.immediate(db.immediate(sql`SELECT 2 AS v`))
      expect(nested).toEqual([{ v: 2 }])
    })
  )
})

describe("waiting for another process's lock", () => {
  it.scoped("does not block the event loop: other work runs while a write waits", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const built = yield* Layer.build(layerSqlite({ filename, busyTimeoutMs: 1_500 }))
      const store = Context.get(built, RunStore)
      yield* store.reserve(newRun("r1"))
      const lock = yield* Scope.make()
      yield* holdWriteLock(filename).pipe(Scope.extend(lock))
      const order: Array<string> = []
      const write = store.cancel("r1", "agent").pipe(
        Effect.exit,
        Effect.tap(() => Effect.sync(() => order.push("write answered")))
      )
      // A timer on the event loop: with a synchronous busy wait it could only fire after the write.
      const timer = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 20))).pipe(
        Effect.tap(() => Effect.sync(() => order.push("timer fired")))
      )
      const [exit] = yield* Effect.all([write, timer], { concurrency: 2 })
      expect(order).toEqual(["timer fired", "write answered"])
      expect(Exit.isFailure(exit)).toBe(true)
      yield* Scope.close(lock, Exit.void)
    })
  )

  it.scoped("urgent writes give up within their own budget, then the normal budget applies again", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      // A normal write would wait a minute (past the test's timeout) for the lock.
      const built = yield* Layer.build(layerSqlite({ filename, busyTimeoutMs: 60_000 }))
      const db = Context.get(built, Database)
      const store = Context.get(built, RunStore)
      yield* store.reserve(newRun("r1"))
      const urgent = db.urgent
      if (urgent === undefined) return yield* Effect.dieMessage("urgent missing")
      const lock = yield* Scope.make()
      yield* holdWriteLock(filename).pipe(Scope.extend(lock))
      const failure = yield* Effect.flip(urgent(30)(store.cancel("r1", "agent")))
      expect(failure._tag).toBe("StoreFailure")
      expect(failure.message).toMatch(/locked|busy/i)
      // The lock goes away while a normal write waits: it then succeeds.
      const release = Effect.zipRight(
        Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 30))),
        Scope.close(lock, Exit.void)
      )
      const [cancelled] = yield* Effect.all([store.cancel("r1", "agent"), release], { concurrency: 2 })
      expect(cancelled._tag).toBe("Cancelled")
    })
  )
})
