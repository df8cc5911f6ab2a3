/**
 * The spec's "Conformance" section, one describe per bullet. Every scenario runs the real
 * core (event policy, abort ordering, coordinator) on a real SQLite file, the fake Pi session
 * and TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Scope, TestClock } from "effect"
import type { SourceEvent } from "../../src/domain/event-policy.ts"
import { makeKit, newRun } from "../notifications/kit.ts"
import { freshLocation, joinAdvancing, whenDone } from "../support/backend.ts"
import {
  type Harness,
  FALLBACK,
  interrupted,
  makeHarness,
  presentation,
  prompt,
  provenance,
  run,
  terminal
} from "./harness.ts"

/** Every message in the branch that carries this intent ID. */
const carrying = (h: Harness, intentId: string | null) =>
  Effect.map(h.fake.branch, (branch) =>
    branch.filter(
      (e) =>
        typeof e.details === "object" &&
        e.details !== null &&
        "turnIntentId" in e.details &&
        e.details.turnIntentId === intentId
    )
  )

describe("conformance: one eligible source event produces at most one intent", () => {
  it.scoped("abort, repeated publishing, terminal and handoff handling all address one intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const other = yield* makeHarness({ path: h.path }) // a second process on the same database
      yield* h.fake.startTurn
      const a = yield* h.events.publish(interrupted("controllerInterrupted"))
      const b = yield* h.events.publish(interrupted("controllerInterrupted"))
      const c = yield* other.events.publish(interrupted("controllerInterrupted"))
      const d = yield* h.events.publish(terminal("failed", provenance("controllerInterrupted")))
      const e = yield* other.events.publish(terminal("failed", provenance("controllerInterrupted")))
      expect(new Set([a, b, c, d, e].map((r) => r.intentId)).size).toBe(1)
      expect(yield* h.intents).toHaveLength(1)
    })
  )
})

describe("conformance: one intent produces at most one successor message", () => {
  it.scoped("a natural prompt, fallback passes, session start and repeated settles send one message", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("timedOut"))
      yield* h.events.publish(terminal("timed_out", provenance("timedOut")))
      const natural = yield* Effect.fork(h.coordinator.deliverNatural(prompt("recovery step")))
      yield* h.settle(true)
      yield* joinAdvancing(natural)
      yield* h.coordinator.onSessionStart
      yield* h.settle()
      yield* h.coordinator.syncFallbacks("periodic")
      expect(yield* carrying(h, intentId)).toHaveLength(1)
      expect(yield* h.sentOfType(FALLBACK)).toEqual([])
      expect(yield* h.fake.triggeredTurns).toBe(1)
    })
  )
})

describe("conformance: an agent self-cancel receives one fallback after settlement", () => {
  it.scoped("cancel during the active turn: abort now, one fallback after agent_settled", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(
        interrupted("agentCancelled", { reason: "agent called workflow cancel" })
      )
      expect(yield* h.fake.phase).toBe("aborting")
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      // Nothing reaches the aborting turn, not even from a sync pass.
      expect((yield* h.coordinator.syncFallbacks("periodic")).skipped).toBe("busy")
      expect(yield* h.fake.sent).toEqual([])
      const report = yield* h.settle(true)
      expect(report.delivered).toEqual([intentId])
      const [fallback] = yield* h.fake.sent
      expect(fallback).toMatchObject({ phase: "idle", startedTurn: true })
      expect(fallback?.message.content).toContain("cancelled")
      yield* h.settle()
      yield* TestClock.adjust("1 hour")
      yield* h.coordinator.syncFallbacks("periodic")
      expect(yield* h.fake.triggeredTurns).toBe(1)
    })
  )

  it.scoped("terminal cancellation recorded after the settle: the periodic pass delivers it once", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(2_000) } })
      yield* h.fake.startTurn
      yield* h.events.publish(interrupted("agentCancelled"))
      yield* h.settle(true)
      expect(yield* h.fake.sent).toEqual([])
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      yield* TestClock.adjust(2_000)
      expect(yield* whenDone(h.sentOfType(FALLBACK), (sent) => sent.length > 0)).toHaveLength(1)
      yield* h.fake.settle()
      yield* TestClock.adjust(20_000)
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )
})

describe("conformance: an asynchronous crash after a successful start result receives one fallback after settlement", () => {
  it.scoped("the turn that saw 'started' finishes normally; then one fallback reports the failure", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(
        terminal("failed", null, { reason: "runtime validation: scope must be a non-empty string" })
      )
      expect(yield* h.fake.aborts).toBe(0)
      expect((yield* h.coordinator.syncFallbacks("periodic")).skipped).toBe("busy")
      expect((yield* h.settle()).delivered).toEqual([intentId])
      const [fallback] = yield* h.fake.sent
      expect(fallback?.message.content).toContain("scope must be a non-empty string")
      expect(fallback?.message.content).toContain("recorded as failed")
      yield* h.settle()
      expect(yield* h.fake.triggeredTurns).toBe(1)
    })
  )
})

describe("conformance: a natural recovery prompt or presentation suppresses fallback by resolving the same intent", () => {
  it.scoped(
    "timeout, then a recovery prompt: resolved as workflowPrompt, terminal handling later sends nothing",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        yield* h.fake.startTurn
        const { intentId } = yield* h.events.publish(interrupted("timedOut"))
        const recovery = yield* Effect.fork(
          h.coordinator.deliverNatural(prompt("inspect and choose the next stage"))
        )
        yield* h.settle(true)
        expect((yield* Fiber.join(recovery)).turnIntentId).toBe(intentId)
        yield* h.events.publish(terminal("failed", provenance("timedOut")))
        yield* h.settle()
        expect(yield* h.sentOfType(FALLBACK)).toEqual([])
        expect((yield* h.intents)[0]).toMatchObject({ resolution: "workflowPrompt", eligibleAt: null })
      })
  )

  it.scoped("controller interruption, then a completed presentation: resolved as presentation", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("controllerInterrupted"))
      const shown = yield* Effect.fork(h.coordinator.deliverNatural(presentation("completed: PR opened")))
      yield* h.settle(true)
      expect((yield* Fiber.join(shown)).turnIntentId).toBe(intentId)
      yield* h.settle()
      expect(yield* h.sentOfType(FALLBACK)).toEqual([])
      expect((yield* h.intents)[0]?.resolution).toBe("presentation")
    })
  )
})

describe("conformance: direct cancellation, pause, Escape, user hold, and shutdown produce no automatic turn", () => {
  const quiet = (kind: "directCancel" | "pause" | "userHold" | "shutdown"): SourceEvent => ({
    _tag: "Quiet",
    run: run(),
    kind
  })

  it.scoped("quiet events create no intent, abort nothing and start no turn", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(60_000) } })
      yield* h.fake.startTurn
      for (const kind of ["directCancel", "pause", "userHold", "shutdown"] as const)
        yield* h.events.publish(quiet(kind))
      // A direct /workflow cancel ends the run without agent provenance: still quiet.
      yield* h.events.publish(terminal("cancelled", null))
      yield* h.settle(true)
      yield* h.coordinator.onSessionStart
      yield* TestClock.adjust("1 hour")
      expect(yield* h.intents).toEqual([])
      expect(yield* h.fake.aborts).toBe(0)
      expect(yield* h.fake.triggeredTurns).toBe(0)
    })
  )

  it.scoped("Escape holds the workflow: no fallback is sent while held, even for an eligible intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(60_000) } })
      yield* h.events.publish(terminal("failed", null, { run: run({ runId: "other-run" }) }))
      yield* h.fake.startTurn
      yield* h.fake.setUserHold(true) // the adapter sets this on the user's Escape
      yield* h.events.publish(quiet("userHold"))
      yield* h.settle(true)
      yield* TestClock.adjust("1 hour")
      expect(yield* h.fake.sent).toEqual([])
    })
  )

  it.scoped("a shutting-down session never receives a fallback", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(60_000) } })
      yield* h.fake.startTurn
      yield* h.events.publish(interrupted("agentCancelled"))
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      yield* h.fake.setShuttingDown(true)
      yield* h.events.publish(quiet("shutdown"))
      expect((yield* h.settle(true)).skipped).toBe("shuttingDown")
      yield* TestClock.adjust("1 hour")
      expect(yield* h.fake.sent).toEqual([])
    })
  )
})

describe("conformance: claim transfer permits natural resolution by the new owner and prevents stale writes", () => {
  it.scoped("old runner loses its claim; the intent waits; the new owner's prompt resolves it", () =>
    Effect.gen(function* () {
      const oldRunner = yield* makeHarness({ timings: { syncInterval: Duration.millis(3_600_000) } })
      const newRunner = yield* makeHarness({ path: oldRunner.path, sessionOf: oldRunner })
      yield* oldRunner.fake.startTurn
      const { intentId } = yield* oldRunner.events.publish(interrupted("claimLost"))
      // The old runner was mid-delivery when it lost the run: it holds a short claim.
      yield* oldRunner.store.claimForRun({
        runId: "run-1",
        targetSessionId: "session-1",
        token: "old-runner",
        leaseMs: 1_000
      })
      yield* oldRunner.settle(true)
      yield* TestClock.adjust("2 days") // time alone proves nothing
      expect(yield* oldRunner.fake.sent).toEqual([])
      expect((yield* oldRunner.intents)[0]).toMatchObject({ eligibleAt: null, resolvedAt: null })
      const receipt = yield* newRunner.coordinator.deliverNatural(prompt("continue at review"))
      expect(receipt).toMatchObject({ turnIntentId: intentId, sent: true })
      // A stale claimant cannot write a resolution any more.
      const stale = yield* Effect.exit(
        oldRunner.store.resolve({
          intentId: intentId ?? "",
          token: "old-runner",
          resolution: "fallback",
          messageId: "m"
        })
      )
      expect(stale).toEqual(Exit.fail(expect.objectContaining({ _tag: "ClaimNotHeld", reason: "resolved" })))
      expect((yield* oldRunner.intents)[0]?.resolution).toBe("workflowPrompt")
      yield* oldRunner.fake.settle()
      yield* TestClock.adjust("1 hour")
      expect(yield* oldRunner.sentOfType(FALLBACK)).toEqual([])
    })
  )

  it.scoped(
    "handoff evidence with no successor makes it eligible; the fallback never calls the run terminal",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        yield* h.fake.startTurn
        yield* h.events.publish(interrupted("claimLost"))
        yield* h.settle(true)
        yield* h.events.publish({
          _tag: "HandoffEnded",
          run: run(),
          provenance: provenance("claimLost"),
          observedState: "handoff",
          reason: "the new owner parked the run without a prompt for this session"
        })
        expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toHaveLength(1)
        const [fallback] = yield* h.fake.sent
        expect(fallback?.message.content).toMatch(/does not mean the run has ended/)
        expect(fallback?.message.content).not.toMatch(/recorded as/)
      })
  )
})

describe("conformance: polling, restart, lease expiry, and send-before-resolution failure do not duplicate turns", () => {
  it.scoped("polling: many periodic passes, one fallback", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ timings: { syncInterval: Duration.millis(100) } })
      yield* h.events.publish(terminal("failed", null))
      for (let i = 0; i < 20; i++) {
        yield* TestClock.adjust(100)
        yield* h.fake.settle()
      }
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )

  it.scoped("send before resolution, then a crash: the restarted coordinator repairs without sending", () =>
    Effect.gen(function* () {
      const dbPath = yield* freshLocation
      const firstScope = yield* Scope.make()
      const first = yield* Scope.extend(
        makeHarness({ path: dbPath, coordinator: { resolveAttempts: 1 } }),
        firstScope
      )
      const { intentId } = yield* first.events.publish(terminal("failed", null))
      yield* first.setFaults({ resolve: "fail" })
      expect((yield* first.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      expect((yield* first.intents)[0]?.resolvedAt).toBeNull()
      const { path } = first
      const sessionOf = first
      yield* first.fake.settle()
      yield* Scope.close(firstScope, Exit.void) // the extension process goes away
      yield* TestClock.adjust(30_000) // and its lease lapses
      const restarted = yield* makeHarness({ path, sessionOf })
      expect(yield* restarted.coordinator.onSessionStart).toMatchObject({
        delivered: [],
        repaired: [intentId]
      })
      expect(yield* restarted.sentOfType(FALLBACK)).toHaveLength(1)
      expect((yield* restarted.intents)[0]?.resolution).toBe("fallback")
    })
  )

  it.scoped("lease expiry: a crashed claimant blocks others only until its lease ends, then one send", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      const { intentId } = yield* h.events.publish(terminal("failed", null))
      yield* h.store.claimEligibleForSession({
        targetSessionId: "session-1",
        limit: 1,
        token: "crashed",
        leaseMs: 30_000
      })
      expect((yield* h.coordinator.onSessionStart).delivered).toEqual([])
      yield* TestClock.adjust(29_999)
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toEqual([])
      yield* TestClock.adjust(1)
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      yield* h.fake.settle()
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toEqual([])
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )

  it.scoped("restart with a resolved intent and repeated terminal handling sends nothing more", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.events.publish(terminal("failed", null))
      yield* h.coordinator.onSessionStart
      yield* h.fake.settle()
      const restarted = yield* makeHarness({ path: h.path, sessionOf: h })
      yield* restarted.events.publish(terminal("failed", null))
      yield* restarted.coordinator.onSessionStart
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )
})

describe("conformance: passive workflow notifications keep their current behavior", () => {
  it.scoped("progress and final notifications start no turn and neither claim nor resolve an intent", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      // The notification services on the same database and the same Pi session.
      const n = yield* makeKit({ path: h.path, sessionContext: h.sessionContext })
      yield* n.runs.reserve(newRun("run-1", "session-1"))
      const { intentId } = yield* h.events.publish(terminal("failed", null))
      yield* h.fake.startTurn
      yield* n.notifications.progress({
        runId: "run-1",
        text: "progress report",
        nodeId: null,
        attemptId: null
      })
      // The run ends: its one final notification is written with the end and shown.
      yield* n.endingRuns.cancel("run-1", "user")
      yield* h.fake.settle()
      const shown = yield* n.shown
      expect(shown.map((r) => r.message.details.kind)).toEqual(["progress", "final"])
      expect(shown.every((r) => !r.options.triggerTurn && !r.startedTurn)).toBe(true)
      // The final is shown in the conversation; progress is the run's footer line instead.
      expect(shown.map((r) => r.message.display)).toEqual([false, true])
      expect(yield* n.store.list({ state: "pending", limit: 10 })).toEqual([])
      expect(yield* h.fake.triggeredTurns).toBe(0)
      expect((yield* h.intents)[0]).toMatchObject({ resolvedAt: null, deliveryClaimToken: null })
      // The intent is still owed its successor turn: the notifications did not satisfy it.
      expect((yield* h.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
    })
  )
})
