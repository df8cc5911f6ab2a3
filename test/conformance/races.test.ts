/**
 * Races and failures around delivery: two coordinators on one database file, send failures,
 * lease expiry, restart with pending eligible intents and busy-session deferral.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Scope, TestClock } from "effect"
import { freshLocation } from "../support/backend.ts"
import { FALLBACK, interrupted, makeHarness, prompt, provenance, run, terminal } from "./harness.ts"

describe("two coordinators on one database", () => {
  it.scoped("racing fallback passes deliver each eligible intent exactly once", () =>
    Effect.gen(function* () {
      const a = yield* makeHarness()
      const b = yield* makeHarness({ path: a.path })
      const ids = new Set<string | null>()
      for (const runId of ["r1", "r2", "r3", "r4", "r5"]) {
        ids.add((yield* a.events.publish(terminal("failed", null, { run: run({ runId }) }))).intentId)
      }
      for (let round = 0; round < 6; round++) {
        yield* Effect.all(
          [a.coordinator.syncFallbacks("periodic"), b.coordinator.syncFallbacks("periodic")],
          {
            concurrency: "unbounded"
          }
        )
        yield* a.fake.settle()
        yield* b.fake.settle()
      }
      const sent = [...(yield* a.sentOfType(FALLBACK)), ...(yield* b.sentOfType(FALLBACK))]
      const delivered = sent.map((r) => r.message.details.turnIntentId)
      expect(delivered).toHaveLength(5)
      expect(new Set(delivered)).toEqual(ids)
      expect(yield* a.store.list({ state: "pending", limit: 10 })).toEqual([])
    })
  )

  // Live clock: the natural delivery waits (Clock.sleep) for the fallback's claim to end, and on
  // PostgreSQL that claim ends after real I/O, which a TestClock that no one adjusts never sees.
  it.scopedLive(
    "a natural prompt in one process and a fallback in another: one carries the intent, none is lost",
    () =>
      Effect.gen(function* () {
        const a = yield* makeHarness()
        const b = yield* makeHarness({ path: a.path })
        const { intentId } = yield* a.events.publish(interrupted("timedOut"))
        yield* a.events.publish(terminal("timed_out", provenance("timedOut")))
        yield* Effect.all(
          [a.coordinator.syncFallbacks("periodic"), b.coordinator.deliverNatural(prompt("recover"))],
          {
            concurrency: "unbounded"
          }
        )
        const sent = [...(yield* a.fake.sent), ...(yield* b.fake.sent)]
        const carrying = sent.filter((r) => r.message.details.turnIntentId === intentId)
        expect(carrying).toHaveLength(1)
        expect(sent.filter((r) => r.message.content === "recover")).toHaveLength(1)
        expect((yield* a.intents)[0]?.resolvedAt).not.toBeNull()
      })
  )
})

describe("send failure, lease expiry, restart, busy session", () => {
  it.scoped("fallback send fails twice, then one fallback is delivered on a later settle", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* h.events.publish(interrupted("agentCancelled"))
      yield* h.events.publish(terminal("cancelled", provenance("agentCancelled")))
      yield* h.fake.failNextSends(2)
      expect((yield* h.settle(true)).failed).toEqual([intentId])
      expect((yield* h.settle()).failed).toEqual([intentId])
      expect((yield* h.settle()).delivered).toEqual([intentId])
      yield* h.settle()
      expect(yield* h.sentOfType(FALLBACK)).toHaveLength(1)
      expect(yield* h.fake.failedSends).toBe(2)
    })
  )

  it.scoped("a claim stranded by a failed release is taken over only after its lease expires", () =>
    Effect.gen(function* () {
      const a = yield* makeHarness({ timings: { deliveryLease: Duration.millis(30_000) } })
      const b = yield* makeHarness({ path: a.path })
      const { intentId } = yield* a.events.publish(terminal("failed", null))
      yield* a.fake.failNextSends(1)
      yield* a.setFaults({ release: "fail" }) // process A cannot even give its claim back
      expect((yield* a.coordinator.syncFallbacks("periodic")).failed).toEqual([intentId])
      expect((yield* b.coordinator.syncFallbacks("periodic")).delivered).toEqual([])
      yield* TestClock.adjust(29_999)
      expect((yield* b.coordinator.syncFallbacks("periodic")).delivered).toEqual([])
      yield* TestClock.adjust(1)
      expect((yield* b.coordinator.syncFallbacks("periodic")).delivered).toEqual([intentId])
      expect([...(yield* a.fake.sent), ...(yield* b.fake.sent)]).toHaveLength(1)
    })
  )

  it.scoped("restart with pending eligible intents: session start delivers them one turn at a time", () =>
    Effect.gen(function* () {
      const path = yield* freshLocation
      const firstScope = yield* Scope.make()
      const first = yield* Scope.extend(makeHarness({ path }), firstScope)
      yield* first.fake.setShuttingDown(true) // the old process was closing: nothing was sent
      yield* first.events.publish(terminal("failed", null, { run: run({ runId: "r1" }) }))
      yield* first.events.publish({
        _tag: "LaunchFailed",
        run: run({ runId: "r2" }),
        reason: "queue row failed"
      })
      expect((yield* first.coordinator.onSettled).skipped).toBe("shuttingDown")
      yield* Scope.close(firstScope, Exit.void)
      const restarted = yield* makeHarness({ path })
      expect((yield* restarted.coordinator.onSessionStart).delivered).toHaveLength(1)
      expect((yield* restarted.settle()).delivered).toHaveLength(1)
      expect((yield* restarted.settle()).delivered).toEqual([])
      expect(yield* restarted.fake.triggeredTurns).toBe(2)
    })
  )

  it.scoped(
    "busy-session deferral: a prompt for a run with a pending intent waits for the user's turn to settle",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness()
        const { intentId } = yield* h.events.publish(interrupted("controllerInterrupted"))
        yield* h.fake.startTurn // the user is talking to the agent about something else
        const delivering = yield* Effect.fork(h.coordinator.deliverNatural(prompt("continue")))
        yield* Effect.yieldNow()
        expect(yield* h.fake.waiting).toBe(1)
        expect(yield* h.fake.sent).toEqual([])
        yield* h.settle()
        expect(yield* Fiber.join(delivering)).toMatchObject({ turnIntentId: intentId, sent: true })
        expect((yield* h.fake.sent)[0]).toMatchObject({ phase: "idle", startedTurn: true })
      })
  )
})
