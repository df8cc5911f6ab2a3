import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { resolutionMessageId } from "../../src/domain/identity.ts"
import {
  FALLBACK,
  interrupted,
  makeHarness,
  prompt,
  provenance,
  run,
  terminal
} from "../conformance/harness.ts"

describe("fallback sync", () => {
  it.scoped("after settle: one fallback, followUp + triggerTurn, resolved with its message ID", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("agentCancelled"))
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      const report = yield* h.settle(true)
      expect(report).toEqual({ delivered: [intentId], repaired: [], failed: [], skipped: null })
      const [sent] = yield* h.fake.sent
      expect(sent).toMatchObject({
        options: { deliverAs: "followUp", triggerTurn: true },
        phase: "idle",
        startedTurn: true
      })
      expect(sent?.message.details).toMatchObject({
        schema: "pi-workflows.deferred-turn-message.v1",
        turnIntentId: intentId,
        runId: "run-1",
        cause: "agentCancelled"
      })
      expect((yield* h.intents)[0]).toMatchObject({
        resolution: "fallback",
        resolutionMessageId: resolutionMessageId(intentId ?? "", "fallback")
      })
    })
  )

  it.scoped("ineligible intents are never sent as fallbacks", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(interrupted("timedOut"))
      expect(yield* h.settle(true)).toMatchObject({ delivered: [], skipped: null })
      expect(yield* h.fake.sent).toEqual([])
    })
  )

  it.scoped("at most one fallback per pass; the next goes after the next settle", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null, { run: run({ runId: "run-a" }) }))
      yield* h.events.publish(terminal("failed", null, { run: run({ runId: "run-b" }) }))
      expect((yield* h.coordinator.syncFallbacks("sessionStart")).delivered).toHaveLength(1)
      // The fallback started a turn: the session is busy, the next pass waits.
      expect((yield* h.coordinator.syncFallbacks("periodic")).skipped).toBe("busy")
      expect((yield* h.settle()).delivered).toHaveLength(1)
      expect((yield* h.settle()).delivered).toHaveLength(0)
      const runs = (yield* h.sentOfType(FALLBACK)).map((r) => r.message.details.runId)
      expect([...runs].sort()).toEqual(["run-a", "run-b"])
      expect(yield* h.fake.triggeredTurns).toBe(2)
    })
  )

  it.scoped("shutdown, user hold and a running turn block delivery; the intent waits", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null))
      yield* h.fake.setShuttingDown(true)
      expect((yield* h.coordinator.syncFallbacks("settled")).skipped).toBe("shuttingDown")
      yield* h.fake.setShuttingDown(false)
      yield* h.fake.setUserHold(true)
      expect((yield* h.coordinator.syncFallbacks("periodic")).skipped).toBe("userHold")
      yield* h.fake.setUserHold(false)
      yield* h.fake.startTurn
      expect((yield* h.coordinator.syncFallbacks("periodic")).skipped).toBe("busy")
      expect(yield* h.fake.sent).toEqual([])
      expect((yield* h.settle()).delivered).toHaveLength(1)
    })
  )

  it.scoped("a send failure releases the claim; a later pass delivers it once", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(terminal("failed", null))
      yield* h.fake.failNextSends(1)
      expect(yield* h.coordinator.syncFallbacks("periodic")).toEqual({
        delivered: [],
        repaired: [],
        failed: [intentId],
        skipped: null
      })
      expect((yield* h.intents)[0]).toMatchObject({ resolvedAt: null, deliveryClaimToken: null })
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )

  it.scoped("a fallback already in the branch is repaired, not sent again", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(terminal("failed", null))
      yield* h.fake.appendBranch({ customType: FALLBACK, content: "…", details: { turnIntentId: intentId } })
      expect(yield* h.coordinator.onSessionStart).toMatchObject({ delivered: [], repaired: [intentId] })
      expect(yield* h.fake.sent).toEqual([])
      expect((yield* h.intents)[0]?.resolution).toBe("fallback")
    })
  )

  it.scoped("an eligible intent whose run has a natural delivery in progress is left to it", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("recover")))
      yield* Effect.yieldNow()
      yield* h.events.publish(terminal("timed_out", provenance("timedOut")))
      // The settle handler runs before the woken prompt gets to claim.
      yield* h.fake.settle({ aborted: true })
      const report = yield* h.coordinator.onSettled
      expect(report.delivered).toEqual([])
      expect(yield* Fiber.join(delivering)).toMatchObject({ turnIntentId: intentId, sent: true })
      expect(yield* h.sentOfType(FALLBACK)).toEqual([])
      expect((yield* h.intents)[0]?.resolution).toBe("workflowPrompt")
    })
  )

  it.scoped("only intents of the current session are delivered", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null, { run: run({ targetSessionId: "session-2" }) }))
      expect((yield* h.coordinator.onSessionStart).delivered).toEqual([])
      yield* h.fake.setSessionId("session-2")
      expect((yield* h.coordinator.onSessionStart).delivered).toHaveLength(1)
    })
  )

  it.scoped("verified idle clears a stale system abort (abort requested while nothing ran)", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(interrupted("agentCancelled")) // idle: the abort is a no-op, no settle follows
      expect(yield* h.bookkeeping.inFlight).toHaveLength(1)
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toHaveLength(1)
      expect(yield* h.bookkeeping.inFlight).toEqual([])
    })
  )

  it.scoped("the periodic pass delivers while idle, on its schedule", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(5_000) } })
      yield* h.fake.startTurn
      yield* h.events.publish({ _tag: "LaunchFailed", run: run(), reason: "bad input" })
      yield* TestClock.adjust(5_000)
      expect(yield* h.fake.sent).toEqual([]) // busy
      yield* h.fake.settle()
      yield* TestClock.adjust(4_999)
      expect(yield* h.fake.sent).toEqual([])
      yield* TestClock.adjust(1)
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
      yield* h.fake.settle()
      yield* TestClock.adjust(60_000)
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )

  it.scoped("a failing store fails the pass with a typed error and sends nothing", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null))
      yield* h.setFaults({ claimEligibleForSession: "fail" })
      expect((yield* Effect.flip(h.coordinator.syncFallbacks("periodic")))._tag).toBe("StoreFailure")
      expect(yield* h.fake.sent).toEqual([])
    })
  )
})
