/**
 * The fault-injection kit itself (`src/testing/store-faults.ts`): scripted faults on the
 * TurnIntentStore, and real SQLite faults (another connection holding the write lock, a
 * read-only connection). Every faulted write leaves the table exactly as it was.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import {
  BUSY_MESSAGE,
  holdWriteLock,
  layerSqlite,
  READONLY_MESSAGE,
  readOnlyConnection,
  StoreFaults
} from "../../src/testing/store-faults.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { snapshotIntents } from "../support/store.ts"
import { tempDbPath } from "../support/temp-db.ts"

const open = (options: { readonly busyTimeoutMs?: number } = {}) =>
  Effect.gen(function* () {
    const filename = yield* tempDbPath
    const context = yield* Layer.build(layerSqlite({ filename, ...options }))
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

describe("real SQLite faults", () => {
  it.scoped("another connection's write lock: SQLITE_BUSY after the busy timeout, nothing written", () =>
    Effect.gen(function* () {
      const { store, filename } = yield* open({ busyTimeoutMs: 20 })
      const lock = yield* Scope.make()
      yield* holdWriteLock(filename).pipe(Scope.extend(lock))
      const error = yield* Effect.flip(store.ensure(sampleIntent()))
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toMatch(/locked|BUSY/i)
      expect(yield* store.list({ limit: 10 })).toEqual([]) // reads still work under the lock (WAL)
      yield* Scope.close(lock, Exit.void)
      yield* store.ensure(sampleIntent())
      expect(yield* snapshotIntents(filename)).toHaveLength(1)
    })
  )

  it.scoped("a read-only connection: SQLITE_READONLY on every write, reads work, writable again after", () =>
    Effect.gen(function* () {
      const { store, filename, context } = yield* open()
      const existing = yield* store.ensure(sampleIntent({ eligible: true }))
      const before = yield* snapshotIntents(filename)
      const readOnly = yield* Scope.make()
      yield* readOnlyConnection.pipe(Effect.provide(context), Scope.extend(readOnly))
      const writes: ReadonlyArray<Effect.Effect<unknown, { readonly message: string }>> = [
        store.ensure(sampleIntent({ sourceEventId: "source-event:2" })),
        store.claimEligibleForSession({ targetSessionId: "session-1", token: "t", leaseMs: 1_000, limit: 5 }),
        store.makeEligible({ intentId: existing.intentId })
      ]
      for (const write of writes) {
        const error = yield* Effect.flip(write)
        expect(error.message).toMatch(/readonly/i)
      }
      expect(Option.isSome(yield* store.get(existing.intentId))).toBe(true)
      expect(yield* snapshotIntents(filename)).toEqual(before)
      yield* Scope.close(readOnly, Exit.void)
      yield* store.claimEligibleForSession({
        targetSessionId: "session-1",
        token: "t",
        leaseMs: 1_000,
        limit: 5
      })
      expect(yield* snapshotIntents(filename)).not.toEqual(before)
    })
  )
})
