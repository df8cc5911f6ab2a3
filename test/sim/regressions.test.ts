/**
 * Bugs the simulation found, each pinned by the smallest scenario that shows it (with the seeds
 * that first found it). They run on the conformance harness: real SQLite, fake Pi, TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { layerFake, PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { layerSqlite, StoreFaults } from "../../src/testing/store-faults.ts"
import { interrupted, makeHarness, presentation, prompt } from "../conformance/harness.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { NoSyncPass } from "../support/timing.ts"

describe("natural delivery waiting for a claim (sim seeds 1678, 2027, 2130, 2333, 2673, 2722, 2864)", () => {
  it.scoped(
    "a system abort that starts while it waits is waited out: nothing is sent into the aborting turn",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({
          timings: { deliveryLease: Duration.millis(30_000), claimRetry: Duration.millis(500) }
        })
        yield* h.fake.startTurn
        const { intentId } = yield* h.events.publish(interrupted("timedOut"))
        yield* h.settle(true)
        // Another claimant (a fallback pass, another process) holds the intent for a second.
        yield* h.store.claimForRun({
          runId: "run-1",
          targetSessionId: "session-1",
          token: "other",
          leaseMs: 1_000
        })
        const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("next step")))
        yield* TestClock.adjust(100)
        expect(yield* h.fake.sent).toEqual([])
        // Meanwhile a new workflow turn runs and is stopped by the system.
        yield* h.fake.startTurn
        yield* h.events.publish(interrupted("controllerInterrupted", { interruption: 1 }))
        expect(yield* h.fake.phase).toBe("aborting")
        yield* TestClock.adjust(2_000) // the other claim expired; the delivery retries
        const intoAbort = (yield* h.fake.sent).filter((r) => r.phase === "aborting")
        expect(intoAbort).toEqual([])
        yield* h.settle(true)
        const receipt = yield* Fiber.join(delivering)
        expect(receipt).toMatchObject({ turnIntentId: intentId, sent: true })
        const branch = yield* h.fake.branch
        expect(branch.filter((e) => e.content === "next step")).toHaveLength(1)
      })
  )

  it.scoped("also when the intent was resolved meanwhile and the message goes out plain", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({
        timings: { deliveryLease: Duration.millis(30_000), claimRetry: Duration.millis(500) }
      })
      yield* h.fake.startTurn
      yield* h.events.publish(interrupted("agentCancelled"))
      yield* h.settle(true)
      yield* h.store.claimForRun({
        runId: "run-1",
        targetSessionId: "session-1",
        token: "other",
        leaseMs: 1_000
      })
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(presentation("the result")))
      yield* TestClock.adjust(100)
      // The other claimant resolves the intent; then a system abort starts.
      const [pending] = yield* h.store.list({ state: "pending", limit: 1 })
      yield* h.store.resolve({
        intentId: pending?.intentId ?? "",
        token: "other",
        resolution: "workflowPrompt",
        messageId: "m-1"
      })
      yield* h.fake.startTurn
      yield* h.events.publish(interrupted("controllerInterrupted", { interruption: 1 }))
      yield* TestClock.adjust(600)
      expect((yield* h.fake.sent).filter((r) => r.phase === "aborting")).toEqual([])
      yield* h.settle(true)
      expect(yield* Fiber.join(delivering)).toMatchObject({ sent: true })
      expect((yield* h.fake.branch).filter((e) => e.content === "the result")).toHaveLength(1)
    })
  )

  it.scoped("a system abort that starts while a store call is slow is waited out too", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(
        Core.layer().pipe(
          Layer.provide(NoSyncPass),
          Layer.provideMerge(layerSqlite({ filename: yield* tempDbPath })),
          Layer.provideMerge(layerFake({ sessionId: "session-1" }))
        )
      )
      const fake = Context.get(context, PiSessionFake)
      const events = Context.get(context, SourceEvents)
      const coordinator = Context.get(context, Coordinator)
      yield* fake.startTurn
      yield* events.publish(interrupted("timedOut"))
      const delivering = yield* Effect.fork(coordinator.deliverNatural(prompt("after the abort")))
      yield* Effect.yieldNow()
      // The first abort settles; the delivery's next store read takes a second.
      yield* Context.get(context, StoreFaults).inject("list", { _tag: "Hang", ms: 1_000 }, { times: 1 })
      yield* fake.settle({ aborted: true })
      yield* coordinator.onSettled
      // Meanwhile a new turn starts and the system aborts it.
      yield* fake.startTurn
      yield* events.publish(interrupted("controllerInterrupted", { interruption: 1 }))
      yield* TestClock.adjust(1_000)
      expect((yield* fake.sent).filter((r) => r.phase === "aborting")).toEqual([])
      yield* fake.settle({ aborted: true })
      yield* coordinator.onSettled
      expect(yield* Fiber.join(delivering)).toMatchObject({ sent: true })
      expect((yield* fake.branch).filter((e) => e.content === "after the abort")).toHaveLength(1)
    })
  )
})
