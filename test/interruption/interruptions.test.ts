import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import type { SourceEvent } from "../../src/domain/event-policy.ts"
import { interrupted, makeHarness, provenance, run, terminal } from "../conformance/harness.ts"

describe("SourceEvents (live)", () => {
  it.scoped("terminal handling reuses the abort's intent, refreshes its facts and makes it eligible", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const abort = yield* h.events.publish(interrupted("agentCancelled", { reason: "agent asked" }))
      const end = yield* h.events.publish(
        terminal("cancelled", provenance("agentCancelled"), { reason: "cancelled by agent" })
      )
      expect(end).toEqual({ intentId: abort.intentId, warning: null })
      const [intent, ...rest] = yield* h.intents
      expect(rest).toEqual([])
      expect(intent?.eligibleAt).not.toBeNull()
      expect(intent?.facts).toMatchObject({ observedState: "cancelled", reason: "cancelled by agent" })
    })
  )

  it.scoped("asynchronous failure after a successful start creates an already-eligible intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const result = yield* h.events.publish(
        terminal("failed", null, { reason: "scope must be a non-empty string" })
      )
      expect(yield* h.fake.aborts).toBe(0)
      const [intent] = yield* h.intents
      expect(intent).toMatchObject({ intentId: result.intentId, cause: "failed" })
      expect(intent?.eligibleAt).not.toBeNull()
    })
  )

  it.scoped("queued launch failure creates an eligible $launch intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish({ _tag: "LaunchFailed", run: run(), reason: "bad scope" })
      const [intent] = yield* h.intents
      expect(intent).toMatchObject({ cause: "launchFailed", nodeId: "$launch", attemptId: null })
      expect(intent?.eligibleAt).not.toBeNull()
    })
  )

  it.scoped("claim loss stays ineligible; only handoff evidence makes it eligible, with handoff facts", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const lost = yield* h.events.publish(interrupted("claimLost"))
      yield* TestClock.adjust("30 days")
      expect((yield* h.intents)[0]?.eligibleAt).toBeNull()
      const handoff: SourceEvent = {
        _tag: "HandoffEnded",
        run: run(),
        provenance: provenance("claimLost"),
        observedState: "handoff",
        reason: "new owner released the run without a successor"
      }
      expect((yield* h.events.publish(handoff)).intentId).toBe(lost.intentId)
      const [intent] = yield* h.intents
      expect(intent?.eligibleAt).not.toBeNull()
      expect(intent?.facts).toMatchObject({ handoff: true, observedState: "handoff" })
    })
  )

  it.scoped("an abort without an intent stops the turn as a system abort and stores nothing", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const lost = interrupted("claimLost")
      if (lost._tag !== "ActiveTurnInterrupted") throw new Error("an interruption")
      // The new owner's prompt is the successor of the stopped turn.
      expect(yield* h.events.publish({ ...lost, superseded: true })).toEqual({
        intentId: null,
        warning: null
      })
      expect(yield* h.fake.aborts).toBe(1)
      expect(yield* h.intents).toEqual([])
      // Recorded as a system abort in flight until the turn settles (never taken for Escape).
      expect((yield* h.bookkeeping.inFlight).length).toBe(1)
    })
  )

  it.scoped("quiet events and direct cancellations create nothing and abort nothing", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      for (const kind of ["directCancel", "pause", "userHold", "shutdown"] as const) {
        expect(yield* h.events.publish({ _tag: "Quiet", run: run(), kind })).toEqual({
          intentId: null,
          warning: null
        })
      }
      yield* h.events.publish(terminal("cancelled", null, { run: run({ origin: "command" }) }))
      yield* h.events.publish(terminal("cancelled", null))
      expect(yield* h.intents).toEqual([])
      expect(yield* h.fake.aborts).toBe(0)
    })
  )

  it.scoped("a store failure at abort time is repaired by terminal handling with the same ID", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.setFaults({ ensure: 1 })
      const abort = yield* h.events.publish(interrupted("timedOut"))
      expect(yield* h.intents).toEqual([])
      const end = yield* h.events.publish(terminal("timed_out", provenance("timedOut")))
      expect(end).toEqual({ intentId: abort.intentId, warning: null })
      expect((yield* h.intents)[0]?.intentId).toBe(abort.intentId)
      expect(yield* h.fake.notifications).toEqual([])
    })
  )

  it.scoped("terminal handling retries transient store failures within its bound", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.setFaults({ ensure: 2 })
      const publishing = yield* Effect.fork(h.events.publish(terminal("failed", null)))
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(publishing)).warning).toBeNull()
      expect(yield* h.intents).toHaveLength(1)
    })
  )

  it.scoped("when the abort-time write and terminal handling both fail, the user is warned", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.setFaults({ ensure: "fail" })
      yield* h.events.publish(interrupted("agentCancelled"))
      const publishing = yield* Effect.fork(
        h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      )
      yield* TestClock.adjust("10 seconds")
      const result = yield* Fiber.join(publishing)
      expect(result.warning).toMatch(/could not preserve the successor-turn guarantee/)
      expect(result.warning).toMatch(/when the turn was stopped/)
      expect(yield* h.fake.notifications).toEqual([{ text: result.warning, level: "warning" }])
      expect(yield* h.intents).toEqual([])
      expect(yield* h.fake.aborts).toBe(1)
    })
  )

  it.scoped("a hung store cannot hang terminal handling", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ interruptions: { terminal: { attempts: 2, attemptTimeoutMs: 1_000 } } })
      yield* h.setFaults({ ensure: "hang" })
      const publishing = yield* Effect.fork(
        h.events.publish({ _tag: "LaunchFailed", run: run(), reason: "x" })
      )
      yield* TestClock.adjust("5 seconds")
      const result = yield* Fiber.join(publishing)
      expect(result.warning).toMatch(/could not preserve/)
      expect(result.warning).not.toMatch(/when the turn was stopped/)
    })
  )
})
