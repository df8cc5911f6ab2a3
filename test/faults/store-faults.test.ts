/**
 * The fault-injection kit itself (`src/testing/store-faults.ts`): scripted faults on the
 * TurnIntentStore, and real database faults on this run's backend (test/faults/backend-faults.ts:
 * another connection holding the write lock, a read-only database; on PostgreSQL also dropped
 * connections, an unreachable server and a slow network). Every faulted write leaves the table
 * exactly as it was.
 */
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  Context,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Option,
  Schedule,
  Scope,
  TestClock
} from "effect"
import { layerTurnIntentStorePg } from "../../src/store/pg/database-pg.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import * as StoreFaultsKit from "../../src/testing/store-faults.ts"
import { BUSY_MESSAGE, READONLY_MESSAGE, StoreFaults } from "../../src/testing/store-faults.ts"
import { freshPgUrl, isPg, isPgLocation } from "../support/backend.ts"
import { startPgProxy } from "../support/pg-proxy.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { snapshotIntents } from "../support/store.ts"
import { tempDir } from "../support/temp-db.ts"
import { dropConnections, faultLocation, holdLock, LOCKED, READ_ONLY, readOnly } from "./backend-faults.ts"

/** The store at `location` of either backend, wrapped by the scripted kit. */
const storeAt = (location: string, options: { readonly busyTimeoutMs?: number }) =>
  StoreFaultsKit.layer.pipe(
    Layer.provideMerge(
      isPgLocation(location)
        ? layerTurnIntentStorePg({ url: location, ...options })
        : layerSqlite({ filename: location, ...options })
    )
  )

const open = (options: { readonly busyTimeoutMs?: number } = {}) =>
  Effect.gen(function* () {
    const filename = yield* faultLocation
    const context = yield* Layer.build(storeAt(filename, options))
    return {
      filename,
      context,
      store: Context.get(context, TurnIntentStore),
      faults: Context.get(context, StoreFaults)
    }
  })

const failureMessage = <A, E>(exit: Exit.Exit<A, E>): string =>
  Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "succeeded"

describe("StoreFaults: scripted faults", () => {
  it.scoped("Busy and ReadOnly fail as StoreFailure with SQLite's message, write nothing, then recover", () =>
    Effect.gen(function* () {
      const { store, faults, filename } = yield* open()
      const before = yield* snapshotIntents(filename)
      yield* faults.inject("ensure", { _tag: "Busy" }, { times: 2 })
      for (let i = 0; i < 2; i++) {
        const error = yield* Effect.flip(store.ensure(sampleIntent()))
        expect(error).toMatchObject({ _tag: "StoreFailure", operation: "ensure", message: BUSY_MESSAGE })
      }
      expect(yield* snapshotIntents(filename)).toEqual(before)
      yield* faults.inject("*", { _tag: "ReadOnly" }, { times: 1 })
      expect(yield* Effect.flip(store.ensure(sampleIntent()))).toMatchObject({ message: READONLY_MESSAGE })
      expect(yield* snapshotIntents(filename)).toEqual(before)
      const created = yield* store.ensure(sampleIntent())
      expect(Option.isSome(yield* store.get(created.intentId))).toBe(true)
      expect(yield* faults.calls).toMatchObject({ ensure: 4, get: 1 })
      expect(yield* faults.fired).toEqual({ Busy: 2, ReadOnly: 1 })
    })
  )

  it.scoped("Throw is a defect, not a typed error, and writes nothing", () =>
    Effect.gen(function* () {
      const { store, faults, filename } = yield* open()
      yield* faults.inject("ensure", { _tag: "Throw", message: "disk on fire" })
      const exit = yield* Effect.exit(store.ensure(sampleIntent()))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(failureMessage(exit)).toContain("disk on fire")
      expect(yield* snapshotIntents(filename)).toEqual([])
      yield* faults.clear("ensure")
      yield* store.ensure(sampleIntent())
      expect(yield* snapshotIntents(filename)).toHaveLength(1)
    })
  )

  it.scoped("Hang never answers; Hang with ms answers late by running the call", () =>
    Effect.gen(function* () {
      const { store, faults } = yield* open()
      yield* faults.inject("list", { _tag: "Hang" }, { times: 1 })
      const hung = yield* Effect.fork(store.list({ limit: 10 }))
      yield* TestClock.adjust(3_600_000)
      expect(hung.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(hung)
      yield* faults.inject("ensure", { _tag: "Hang", ms: 1_000 })
      const slow = yield* Effect.fork(store.ensure(sampleIntent()))
      yield* TestClock.adjust(999)
      expect(slow.unsafePoll()).toBeNull()
      yield* TestClock.adjust(1)
      expect((yield* Fiber.join(slow)).runId).toBe("run-1")
    })
  )
})

describe("real database faults", () => {
  it.live("another connection's write lock: a lock error after the busy timeout, nothing written", () =>
    Effect.gen(function* () {
      const { store, filename } = yield* open({ busyTimeoutMs: 20 })
      const lock = yield* Scope.make()
      yield* holdLock(filename).pipe(Scope.extend(lock))
      const error = yield* Effect.flip(store.ensure(sampleIntent()))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toMatch(LOCKED)
      // Reads still work under the lock (SQLite: WAL; PostgreSQL: EXCLUSIVE mode lets them pass).
      expect(yield* store.list({ limit: 10 })).toEqual([])
      yield* Scope.close(lock, Exit.void)
      yield* store.ensure(sampleIntent())
      expect(yield* snapshotIntents(filename)).toHaveLength(1)
    }).pipe(Effect.scoped)
  )

  it.live("a read-only database: a read-only error on every write, reads work, writable again after", () =>
    Effect.gen(function* () {
      const { store, filename, context } = yield* open()
      const existing = yield* store.ensure(sampleIntent({ eligible: true }))
      const before = yield* snapshotIntents(filename)
      const readOnlyScope = yield* Scope.make()
      yield* readOnly(filename, context).pipe(Scope.extend(readOnlyScope))
      // PostgreSQL replaced the pool's sessions: a call may still meet a dropped one first.
      yield* reconnected(store)
      const writes: ReadonlyArray<Effect.Effect<unknown, { readonly message: string }>> = [
        store.ensure(sampleIntent({ sourceEventId: "source-event:2" })),
        store.claimEligibleForSession({ targetSessionId: "session-1", token: "t", leaseMs: 1_000, limit: 5 }),
        store.makeEligible({ intentId: existing.intentId })
      ]
      for (const write of writes) {
        const error = yield* Effect.flip(write)
        expect(error.message).toMatch(READ_ONLY)
      }
      expect(Option.isSome(yield* store.get(existing.intentId))).toBe(true)
      expect(yield* snapshotIntents(filename)).toEqual(before)
      yield* Scope.close(readOnlyScope, Exit.void)
      yield* reconnected(store)
      yield* store.claimEligibleForSession({
        targetSessionId: "session-1",
        token: "t",
        leaseMs: 1_000,
        limit: 5
      })
      expect(yield* snapshotIntents(filename)).not.toEqual(before)
    }).pipe(Effect.scoped)
  )

  it.live(
    "a lock holder script of one's own: held until the scope closes, a typed failure if it dies first",
    () =>
      Effect.gen(function* () {
        // The child writes its pid to a file on release: the scope's close waited for it to exit.
        const released = join(yield* tempDir(), "released")
        const holder = [
          'process.stdout.write("locked\\n")',
          'process.stdin.on("data", () => {})',
          `process.stdin.on("end", () => { require("node:fs").writeFileSync(process.argv[1], "done"); process.exit(0) })`
        ].join(";")
        const lock = yield* Scope.make()
        yield* StoreFaultsKit.holdLockInChildProcess(holder, released).pipe(Scope.extend(lock))
        expect(existsSync(released)).toBe(false)
        yield* Scope.close(lock, Exit.void)
        expect(readFileSync(released, "utf8")).toBe("done")
        const error = yield* Effect.flip(
          StoreFaultsKit.holdLockInChildProcess(
            'process.stderr.write("no lock here"); process.exit(3)',
            "x",
            "myLock"
          )
        ).pipe(Effect.scoped)
        expect(error).toMatchObject({ _tag: "StoreFailure", operation: "myLock" })
        expect(error.message).toBe("lock holder exited 3: no lock here")
      }).pipe(Effect.scoped)
  )
})

/** Read until a read succeeds (a pool meets each dropped session once, then replaces it). */
const reconnected = (store: Context.Tag.Service<typeof TurnIntentStore>) =>
  Effect.retry(store.list({ limit: 1 }), Schedule.spaced("20 millis").pipe(Schedule.upTo("5 seconds")))

/** Every call's outcome: a value or a typed store failure, never a defect. */
const typed = <A, E extends { readonly _tag: string }>(call: Effect.Effect<A, E>) =>
  Effect.map(Effect.either(call), (result) => {
    if (Either.isLeft(result)) expect(result.left._tag).toBe("StoreFailure")
    return result
  })

describe.skipIf(!isPg)("PostgreSQL network faults (no SQLite meaning: no connection, no server)", () => {
  it.live("connections dropped mid-session: typed failures at most, the pool reconnects, nothing lost", () =>
    Effect.gen(function* () {
      const { store, filename } = yield* open()
      const kept = yield* store.ensure(sampleIntent({ eligible: true }))
      const before = yield* snapshotIntents(filename)
      yield* dropConnections(filename)
      // Each call either answers or fails typed, on a session the server ended.
      for (let i = 0; i < 3; i++) yield* typed(store.get(kept.intentId))
      yield* reconnected(store)
      expect(yield* snapshotIntents(filename)).toEqual(before)
      const found = yield* store.get(kept.intentId)
      expect(Option.map(found, (i) => i.intentId)).toEqual(Option.some(kept.intentId))
      yield* store.ensure(sampleIntent({ sourceEventId: "source-event:2" }))
      expect(yield* snapshotIntents(filename)).toHaveLength(2)
    }).pipe(Effect.scoped)
  )

  it.live(
    "the server becomes unreachable: every call fails typed within the connect timeout, then recovers",
    () =>
      Effect.gen(function* () {
        const proxy = yield* startPgProxy(yield* freshPgUrl)
        const context = yield* Layer.build(layerTurnIntentStorePg({ url: proxy.url, connectTimeoutMs: 500 }))
        const store = Context.get(context, TurnIntentStore)
        yield* store.ensure(sampleIntent())
        yield* proxy.refuse
        const writes: ReadonlyArray<
          Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>
        > = [store.ensure(sampleIntent({ sourceEventId: "source-event:2" })), store.list({ limit: 5 })]
        for (const write of writes) {
          const error = yield* Effect.flip(write)
          expect(error._tag).toBe("StoreFailure")
          expect(error.message.length).toBeGreaterThan(0)
        }
        yield* proxy.heal
        yield* reconnected(store)
        yield* store.ensure(sampleIntent({ sourceEventId: "source-event:2" }))
        expect(yield* snapshotIntents(proxy.url)).toHaveLength(2)
      }).pipe(Effect.scoped)
  )

  it.live("a slow network: a call raced against a bound loses cleanly, and the store works after", () =>
    Effect.gen(function* () {
      const proxy = yield* startPgProxy(yield* freshPgUrl)
      const context = yield* Layer.build(layerTurnIntentStorePg({ url: proxy.url }))
      const store = Context.get(context, TurnIntentStore)
      yield* proxy.slow(300)
      const raced = yield* Effect.either(Effect.timeout(store.ensure(sampleIntent()), "100 millis"))
      expect(Either.isLeft(raced) && raced.left._tag).toBe("TimeoutException")
      yield* proxy.heal
      // The raced write may have landed (the bound only stops waiting); ensure is idempotent.
      yield* reconnected(store)
      yield* store.ensure(sampleIntent())
      expect(yield* snapshotIntents(proxy.url)).toHaveLength(1)
    }).pipe(Effect.scoped)
  )
})
