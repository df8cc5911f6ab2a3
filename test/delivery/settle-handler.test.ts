/**
 * Rule 4 of docs/protocol.md: natural delivery sends only while no `agent_settled` handler of
 * this package runs. Pi reports the session idle while its settle handlers run but holds every
 * turn-triggering send made meanwhile until they return (the fake does the same inside
 * `settleHandler`), so a send made then waits with the handler; a slow store call in the handler
 * would hold it past the bound (or the lease) and the intent would be sent a second time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { DEFAULT_LEASE_MS } from "../../src/domain/timing-policy.ts"
import { NATURAL_OUTSIDE_SETTLE_HANDLER, WRITE_DELAY_BOUND_MS } from "../../src/delivery/protocol.ts"
import { makeHarness, presentation, terminal } from "../conformance/harness.ts"

/** A store call of the settle handler, after its fallback pass, that answers only after `ms`. */
const slowStoreCall = (ms: number) => Effect.sleep(ms)

const withIntent = (branch: ReadonlyArray<{ readonly details: unknown }>, intentId: string) =>
  branch.filter(
    (entry) =>
      typeof entry.details === "object" &&
      entry.details !== null &&
      "turnIntentId" in entry.details &&
      entry.details.turnIntentId === intentId
  )

/**
 * A turn runs with run-1's terminal intent pending and its presentation waiting for idle. Pi
 * settles: the handler runs (marked at once), releases the idle waiters, runs the fallback pass
 * and then a store call that hangs for `hangMs`.
 */
const settleWithSlowHandler = (hangMs: number) =>
  Effect.gen(function* () {
    const h = yield* makeHarness()
    yield* h.fake.startTurn
    const { intentId } = yield* h.events.publish(terminal("completed", null))
    if (intentId === null) return yield* Effect.dieMessage("no intent stored")
    // Eligible for the fallback too (reconciliation found the presentation missing), as in the
    // model: the presentation and the fallback passes compete for it.
    yield* h.store.makeEligible({ intentId })
    const delivering = yield* Effect.fork(
      h.coordinator.deliverNatural({ ...presentation("run completed"), turnIntentId: intentId })
    )
    yield* Effect.yieldNow()
    const handler = yield* Effect.fork(
      h.fake.settleHandler(
        Effect.gen(function* () {
          yield* h.fake.settle()
          yield* Effect.yieldNow()
          yield* h.coordinator.onSettled
          yield* slowStoreCall(hangMs)
        })
      )
    )
    // Everything that can run before the clock moves has run: the handler hangs.
    for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    return { h, intentId, delivering, handler }
  })

describe("rule 4: no natural send while our agent_settled handler runs", () => {
  it.scoped("natural delivery waits for the settle handler to return, then sends once", () =>
    Effect.gen(function* () {
      expect(NATURAL_OUTSIDE_SETTLE_HANDLER).toBe(true) // the model checks the protocol with it
      const hangMs = WRITE_DELAY_BOUND_MS * 2
      const { h, intentId, delivering, handler } = yield* settleWithSlowHandler(hangMs)
      expect(yield* h.session.isIdle).toBe(true)
      expect(yield* h.session.settling).toBe(true)
      // Idle as Pi reports it, but the handler runs: nothing is sent, nothing held.
      expect(yield* h.fake.heldSends).toEqual([])
      expect(yield* h.fake.sent).toEqual([])
      yield* TestClock.adjust(hangMs)
      yield* Fiber.join(handler)
      const receipt = yield* Fiber.join(delivering)
      expect(receipt).toEqual({ turnIntentId: intentId, sent: true, note: null })
      const sent = yield* h.fake.sent
      expect(sent).toHaveLength(1)
      expect(sent[0]?.startedTurn).toBe(true)
      expect(withIntent(yield* h.fake.branch, intentId)).toHaveLength(1)
    })
  )

  it.scoped("a settle handler that hangs past the lease still gives exactly one message", () =>
    Effect.gen(function* () {
      const hangMs = DEFAULT_LEASE_MS + WRITE_DELAY_BOUND_MS
      const { h, intentId, delivering, handler } = yield* settleWithSlowHandler(hangMs)
      // Periodic passes while the handler hangs: past the write-delay bound, then past the lease.
      yield* TestClock.adjust(WRITE_DELAY_BOUND_MS + 1)
      yield* h.coordinator.syncFallbacks("periodic")
      yield* TestClock.adjust(DEFAULT_LEASE_MS - WRITE_DELAY_BOUND_MS)
      yield* h.coordinator.syncFallbacks("periodic")
      yield* TestClock.adjust(hangMs)
      yield* Fiber.join(handler)
      yield* Fiber.join(delivering)
      // The turn the message started ends; the next settle confirms what the branch shows.
      yield* h.settle()
      yield* TestClock.adjust(DEFAULT_LEASE_MS)
      yield* h.coordinator.syncFallbacks("periodic")
      expect(withIntent(yield* h.fake.branch, intentId)).toHaveLength(1)
      const [intent] = yield* h.intents
      expect(intent?.resolvedAt).not.toBeNull()
    })
  )
})
