/**
 * The successor-turn core against a failing store: SQLITE_BUSY, read-only, thrown errors and
 * hangs, scripted and real (on this run's backend: test/faults/backend-faults.ts). Whatever the store does, the abort happens within its bound; when
 * the intent cannot be kept, the warning reaches the session; once the store recovers, every
 * eligible interruption gets exactly one successor message.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Clock,
  Context,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Ref,
  Scope,
  TestClock
} from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import type { SourceEvent } from "../../src/domain/event-policy.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import type { PiSession } from "../../src/session/pi-session.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerTurnIntentStorePg } from "../../src/store/pg/database-pg.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import * as StoreFaultsKit from "../../src/testing/store-faults.ts"
import { type Fault, StoreFaults } from "../../src/testing/store-faults.ts"
import { FALLBACK, interrupted, provenance, run, terminal } from "../conformance/harness.ts"
import { isPgLocation, whenDone } from "../support/backend.ts"
import { snapshotIntents } from "../support/store.ts"
import { withTimings } from "../support/timing.ts"
import { faultLocation, holdLock, LOCKED, READ_ONLY, readOnly } from "./backend-faults.ts"

const PERSIST_TIMEOUT_MS = 250

/** One process: the core over a faulty store on `filename`, on a (possibly shared) fake session. */
const makeProcess = (
  filename: string,
  options: {
    readonly busyTimeoutMs?: number
    readonly session?: Context.Context<PiSession | PiSessionFake>
  } = {}
) =>
  Effect.gen(function* () {
    const session = options.session ?? (yield* Layer.build(layerFake({ sessionId: "session-1" })))
    const busy = options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }
    const stores = yield* Layer.build(
      StoreFaultsKit.layer.pipe(
        Layer.provideMerge(
          isPgLocation(filename)
            ? layerTurnIntentStorePg({ url: filename, ...busy })
            : layerSqlite({ filename, ...busy })
        )
      )
    )
    const core = yield* Layer.build(
      Core.layer().pipe(
        Layer.provide(
          withTimings({ syncInterval: null, abortPersistTimeout: Duration.millis(PERSIST_TIMEOUT_MS) })
        ),
        Layer.provide(Layer.succeedContext(stores)),
        Layer.provide(Layer.succeedContext(session))
      )
    )
    const fake = Context.get(session, PiSessionFake)
    const coordinator = Context.get(core, Coordinator)
    return {
      session,
      stores,
      fake,
      coordinator,
      events: Context.get(core, SourceEvents),
      faults: Context.get(stores, StoreFaults),
      store: Context.get(stores, TurnIntentStore),
      settle: Effect.zipRight(fake.settle(), coordinator.onSettled)
    }
  })

type Process = Effect.Effect.Success<ReturnType<typeof makeProcess>>

/** Publish and note when (Clock time) the turn was aborted. */
const publishTimed = (p: Process, event: SourceEvent) =>
  Effect.gen(function* () {
    const abortedAt = yield* Ref.make<number | null>(null)
    yield* p.fake.onAbort(Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.set(abortedAt, now)))
    const startedAt = yield* Clock.currentTimeMillis
    const result = yield* p.events.publish(event)
    const at = yield* Ref.get(abortedAt)
    return { result, abortDelay: at === null ? null : at - startedAt }
  })

/** After recovery: settles, passes, a session start and a second process deliver one fallback per intent. */
const expectOneFallbackEach = (p: Process, filename: string, intentIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const other = yield* makeProcess(filename, { session: p.session })
    for (let round = 0; round < intentIds.length + 2; round++) {
      yield* p.settle
      yield* p.coordinator.syncFallbacks("periodic")
      yield* other.coordinator.onSessionStart
      yield* Effect.zipRight(p.fake.settle(), other.coordinator.onSettled)
    }
    const sent = (yield* p.fake.sent).filter((r) => r.message.customType === FALLBACK)
    expect(sent.map((r) => r.message.details.turnIntentId).sort()).toEqual([...intentIds].sort())
    const rows = yield* p.store.list({ limit: 100 })
    expect(rows.filter((r) => intentIds.includes(r.intentId)).every((r) => r.resolution === "fallback")).toBe(
      true
    )
  })

const FAULTS: ReadonlyArray<readonly [string, Fault]> = [
  ["SQLITE_BUSY", { _tag: "Busy" }],
  ["read-only", { _tag: "ReadOnly" }],
  ["a thrown error", { _tag: "Throw" }],
  ["a hang", { _tag: "Hang" }]
]

describe("scripted faults on every store operation", () => {
  it.scoped.each(FAULTS)(
    "%s: abort within its bound, the warning reaches the session, one fallback after recovery",
    ([, fault]) =>
      Effect.gen(function* () {
        const filename = yield* faultLocation
        const p = yield* makeProcess(filename)
        yield* p.fake.startTurn
        yield* p.faults.inject("*", fault)

        const aborting = yield* Effect.fork(publishTimed(p, interrupted("agentCancelled")))
        yield* TestClock.adjust(PERSIST_TIMEOUT_MS)
        const abort = yield* Fiber.join(aborting)
        expect(yield* p.fake.phase).toBe("aborting")
        expect(abort.abortDelay).not.toBeNull()
        expect(abort.abortDelay ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(PERSIST_TIMEOUT_MS)
        expect(abort.result.warning).toBeNull() // terminal handling retries first

        // Terminal handling retries, then gives up: the user is told, and so is the engine.
        const ending = yield* Effect.fork(
          p.events.publish(terminal("cancelled", provenance("agentCancelled")))
        )
        yield* TestClock.adjust(20_000)
        const ended = yield* Fiber.join(ending)
        expect(ended.warning).toContain("could not preserve the successor-turn guarantee")
        expect(ended.warning).toContain("when the turn was stopped")
        expect(yield* p.fake.notifications).toContainEqual({ text: ended.warning, level: "warning" })
        expect(yield* snapshotIntents(filename)).toEqual([])
        yield* p.fake.settle({ aborted: true })
        expect(yield* p.fake.sent).toEqual([])

        // The store recovers; the engine publishes the terminal state again (restart recovery).
        yield* p.faults.clear()
        const again = yield* p.events.publish(terminal("cancelled", provenance("agentCancelled")))
        expect(again.warning).toBeNull()
        yield* expectOneFallbackEach(p, filename, [again.intentId ?? ""])
      }),
    20_000
  )

  it.scoped.each(FAULTS)(
    "%s while resolving after the send: branch repair, never a second message",
    ([, fault]) =>
      Effect.gen(function* () {
        const filename = yield* faultLocation
        const p = yield* makeProcess(filename)
        const { intentId } = yield* p.events.publish(terminal("failed", null))
        yield* p.faults.inject("resolve", fault)
        const pass = yield* Effect.fork(Effect.exit(p.coordinator.syncFallbacks("periodic")))
        // On PostgreSQL the claim and the send before the resolve are real I/O: wait for the send.
        yield* whenDone(p.fake.sent, (sent) => sent.length === 1)
        yield* TestClock.adjust(5_000)
        yield* Fiber.interrupt(pass) // a hung resolve stays hung; the process carries on
        expect((yield* p.fake.sent).map((r) => r.message.details.turnIntentId)).toEqual([intentId])
        yield* p.faults.clear()
        yield* TestClock.adjust(31_000) // a claim left behind by a hung or failed resolve expires
        yield* expectOneFallbackEach(p, filename, [intentId ?? ""])
      })
  )

  it.scoped.each(FAULTS)("%s while claiming: nothing is sent, then exactly one fallback", ([, fault]) =>
    Effect.gen(function* () {
      const filename = yield* faultLocation
      const p = yield* makeProcess(filename)
      const { intentId } = yield* p.events.publish({
        _tag: "LaunchFailed",
        run: run(),
        reason: "boom"
      })
      yield* p.faults.inject("claimEligibleForSession", fault)
      const pass = yield* Effect.fork(Effect.exit(p.coordinator.syncFallbacks("periodic")))
      yield* TestClock.adjust(1_000)
      yield* Fiber.interrupt(pass)
      expect(yield* p.fake.sent).toEqual([])
      yield* p.faults.clear()
      yield* expectOneFallbackEach(p, filename, [intentId ?? ""])
    })
  )
})

describe("real database faults", () => {
  it.live(
    "another process holds the write lock: the abort still happens within busy timeout + bound, the warning shows",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const filename = yield* faultLocation
          const p = yield* makeProcess(filename, { busyTimeoutMs: 50 })
          yield* p.fake.startTurn
          const lock = yield* Scope.make()
          yield* holdLock(filename).pipe(Scope.extend(lock))

          // The abort happens although the intent cannot be stored; how soon is measured by
          // `npm run bench -- --only=abort` (never asserted on the wall clock here).
          const abort = yield* publishTimed(p, interrupted("timedOut"))
          expect(yield* p.fake.phase).toBe("aborting")
          expect(abort.abortDelay).not.toBeNull()

          const ended = yield* p.events.publish(terminal("timed_out", provenance("timedOut")))
          expect(ended.warning).toMatch(/could not preserve/)
          expect(ended.warning).toMatch(LOCKED)
          expect(yield* p.fake.notifications).toContainEqual({ text: ended.warning, level: "warning" })

          yield* Scope.close(lock, Exit.void)
          const again = yield* p.events.publish(terminal("timed_out", provenance("timedOut")))
          expect(again.warning).toBeNull()
          yield* p.fake.settle({ aborted: true })
          yield* expectOneFallbackEach(p, filename, [again.intentId ?? ""])
        })
      ).pipe(Logger.withMinimumLogLevel(LogLevel.Error)),
    20_000
  )

  it.live("the database turns read-only: abort, warning, and one fallback once it is writable again", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const filename = yield* faultLocation
        const p = yield* makeProcess(filename)
        yield* p.fake.startTurn
        const readOnlyScope = yield* Scope.make()
        yield* readOnly(filename, p.stores).pipe(Scope.extend(readOnlyScope))
        const abort = yield* publishTimed(p, interrupted("controllerInterrupted"))
        expect(abort.abortDelay).not.toBeNull()
        const ended = yield* p.events.publish(terminal("failed", provenance("controllerInterrupted")))
        expect(ended.warning).toMatch(READ_ONLY)
        expect(yield* p.fake.notifications).toContainEqual({ text: ended.warning, level: "warning" })
        expect(yield* snapshotIntents(filename)).toEqual([])
        yield* Scope.close(readOnlyScope, Exit.void)
        const again = yield* p.events.publish(terminal("failed", provenance("controllerInterrupted")))
        expect(again.warning).toBeNull()
        yield* p.fake.settle({ aborted: true })
        yield* expectOneFallbackEach(p, filename, [again.intentId ?? ""])
      })
    ).pipe(Logger.withMinimumLogLevel(LogLevel.Error))
  )
})
