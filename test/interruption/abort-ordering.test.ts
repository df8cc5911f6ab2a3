import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, TestClock } from "effect"
import { interrupted, makeHarness, run } from "../conformance/harness.ts"

describe("abort ordering", () => {
  it.scoped("the intent is stored and booked before ctx.abort(), then the turn is aborted", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const seenAtAbort: Array<{ stored: boolean; booked: ReadonlyArray<string> }> = []
      let intentId = ""
      yield* h.fake.onAbort(
        Effect.gen(function* () {
          const stored = Option.isSome(yield* Effect.orDie(h.store.get(intentId)))
          seenAtAbort.push({ stored, booked: yield* h.bookkeeping.inFlight })
        })
      )
      // The IDs are deterministic: compute the expected one from a first dry publish elsewhere.
      const other = yield* makeHarness()
      intentId = (yield* other.events.publish(interrupted("agentCancelled"))).intentId ?? ""
      const result = yield* h.events.publish(interrupted("agentCancelled"))
      expect(result).toEqual({ intentId, warning: null })
      expect(seenAtAbort).toEqual([{ stored: true, booked: [intentId] }])
      expect(yield* h.fake.aborts).toBe(1)
      expect(yield* h.fake.phase).toBe("aborting")
      const stored = yield* h.intents
      expect(stored).toHaveLength(1)
      expect(stored[0]).toMatchObject({ cause: "agentCancelled", eligibleAt: null, resolvedAt: null })
      expect(stored[0]?.facts).toMatchObject({ observedState: "interrupted", handoff: false })
    })
  )

  it.scoped("a store that never answers delays the abort by at most the persist bound", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { abortPersistTimeout: Duration.millis(250) } })
      yield* h.fake.startTurn
      yield* h.setFaults({ ensure: "hang" })
      const publishing = yield* Effect.fork(h.events.publish(interrupted("timedOut")))
      yield* TestClock.adjust(249)
      expect(yield* h.fake.aborts).toBe(0)
      yield* TestClock.adjust(1)
      const result = yield* Fiber.join(publishing)
      expect(yield* h.fake.aborts).toBe(1)
      expect(result.intentId).toMatch(/^deferred-turn:/)
      expect(yield* h.bookkeeping.inFlight).toEqual([result.intentId])
      expect(yield* h.intents).toEqual([])
    })
  )

  it.scoped(
    "a publisher interrupted while the store hangs still aborts the turn (abort is the finalizer)",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ timings: { abortPersistTimeout: Duration.millis(250) } })
        yield* h.fake.startTurn
        yield* h.setFaults({ ensure: "hang" })
        const publishing = yield* Effect.fork(h.events.publish(interrupted("timedOut")))
        yield* TestClock.adjust(10)
        expect(yield* h.fake.aborts).toBe(0)
        // The runner fiber is interrupted mid-persist (claim loss, shutdown): the abort still runs.
        yield* Fiber.interrupt(publishing)
        expect(yield* h.fake.aborts).toBe(1)
        expect(yield* h.fake.phase).toBe("aborting")
        expect(yield* h.bookkeeping.inFlight).toHaveLength(1)
      })
  )

  it.scoped("a failing store never prevents the abort", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      yield* h.setFaults({ ensure: "fail" })
      const result = yield* h.events.publish(interrupted("agentCancelled"))
      expect(result.warning).toBeNull() // terminal handling still gets its retry
      expect(yield* h.fake.aborts).toBe(1)
      expect(yield* h.intents).toEqual([])
      expect(yield* h.fake.notifications).toEqual([])
    })
  )

  it.scoped("invalid run identity still aborts, with nothing stored", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const result = yield* h.events.publish(interrupted("agentCancelled", { run: run({ runId: "" }) }))
      expect(result.intentId).toBeNull()
      expect(yield* h.fake.aborts).toBe(1)
      expect(yield* h.bookkeeping.inFlight).toHaveLength(1)
      expect(yield* h.intents).toEqual([])
    })
  )

  it.scoped("provenance belongs to one interruption: repeats reuse it, a later one gets its own", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const first = yield* h.events.publish(interrupted("timedOut", { interruption: 0 }))
      const again = yield* h.events.publish(interrupted("timedOut", { interruption: 0 }))
      const second = yield* h.events.publish(interrupted("timedOut", { interruption: 1 }))
      expect(again.intentId).toBe(first.intentId)
      expect(second.intentId).not.toBe(first.intentId)
      expect(yield* h.intents).toHaveLength(2)
    })
  )
})
