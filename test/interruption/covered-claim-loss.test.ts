/**
 * Reconciliation of a claim-loss intent stored beside a run's end (the old runner's handoff write
 * answered too late or never): from the stored rows alone, an end that owes its own successor
 * covers the `claimLost` intent, which is then never made eligible and is resolved with the
 * end's message; an end that owes nothing (the user's cancel) retires it. Runs on both backends.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { decide, intentRequest } from "../../src/domain/event-policy.ts"
import type { Resolution } from "../../src/domain/turn-intent.ts"
import { reconcileDebts } from "../../src/interruption/reconcile.ts"
import { identify, owedIntent, runRefOfRecord } from "../../src/interruption/run-debts.ts"
import { type NewRun, RunStore, type TerminalRunState } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"
import { sampleRun } from "../support/fixtures.ts"

const SESSION = "s1"

const newRun = (runId: string): NewRun => sampleRun(runId, { targetSessionId: SESSION, startAt: "ask" })

const stores = Effect.gen(function* () {
  const context = yield* Layer.build(
    Layer.mergeAll(RunStoreSql.layer, TurnIntentStoreSql.layer).pipe(
      Layer.provideMerge(databaseLayerAt(yield* freshLocation))
    )
  )
  return { runs: Context.get(context, RunStore), intents: Context.get(context, TurnIntentStore), context }
})

type Stores = Effect.Effect.Success<typeof stores>

/**
 * A's turn on attempt `att-A` is stopped on claim loss (its `claimLost` intent stored, its
 * handoff provenance recorded on the row only when `handoffLanded`); B, which took the run
 * over, ends it in `state`. Returns the ended row and A's intent ID.
 */
const claimLossBesideEnd = (
  { runs, intents }: Stores,
  runId: string,
  state: TerminalRunState,
  handoffLanded = false,
  /** B aborted a turn of its own (the agent's cancel) before the end, which reuses that abort. */
  ownAbort = false
) =>
  Effect.gen(function* () {
    yield* runs.reserve(newRun(runId))
    yield* runs.claim({ runId, token: "A", leaseMs: 60_000, mode: "activate" })
    yield* runs.startStep({ runId, token: "A" }, { nodeId: "ask", attemptId: "att-A" })
    yield* runs.openRequest({ runId, token: "A" }, { requestId: "req-A", nodeId: "ask", attemptId: "att-A" })
    const taken = yield* runs.claim({ runId, token: "B", leaseMs: 60_000, mode: "resume", takeoverFrom: "A" })
    const provenance = { cause: "claimLost" as const, nodeId: "ask", attemptId: "att-A", interruption: 0 }
    const event = {
      _tag: "ActiveTurnInterrupted" as const,
      run: runRefOfRecord(taken),
      provenance,
      reason: "another runner took over the workflow run"
    }
    const request = intentRequest(event, decide(event))
    if (request === null) return yield* Effect.dieMessage("a claim loss owes an intent")
    const lost = yield* identify(request)
    yield* intents.ensure(lost.ensure)
    // B's end comes later than A's abort.
    yield* TestClock.adjust("1 second")
    if (handoffLanded) yield* runs.recordHandoff(runId, provenance)
    if (ownAbort) {
      yield* runs.recordInterruption(
        { runId, token: "B" },
        { cause: "agentCancelled", nodeId: "ask", attemptId: "att-A", interruption: 1 }
      )
    }
    const ended = yield* runs.settle(
      { runId, token: "B" },
      {
        next: {
          _tag: "End",
          state,
          ...(state === "completed" ? { result: { ok: true } } : {}),
          ...(state === "failed" ? { error: { message: "boom", nodeId: "ask", original: null } } : {}),
          // B's own abort is the agent's cancel; without it, the user cancelled directly.
          ...(state === "cancelled"
            ? {
                error: {
                  message: `cancelled by the ${ownAbort ? "agent" : "user"}`,
                  nodeId: "ask",
                  original: null
                },
                cancelledBy: ownAbort ? ("agent" as const) : ("user" as const)
              }
            : {})
        }
      }
    )
    return { ended, lostId: lost.intentId }
  })

/** B's terminal handling: the intent its end owes, stored (eligible unless completed). */
const endIntent = ({ intents }: Stores, ended: Parameters<typeof owedIntent>[0]) =>
  Effect.gen(function* () {
    const request = owedIntent(ended)
    if (request === null) return yield* Effect.dieMessage("the end owes an intent")
    const identified = yield* identify(request)
    yield* intents.ensure({ ...identified.ensure, eligible: ended.state !== "completed" })
    return identified.intentId
  })

/** A delivery of the run's oldest pending intent (a fallback pass or a natural message). */
const deliver = ({ intents }: Stores, runId: string, resolution: Resolution, messageId: string) =>
  Effect.gen(function* () {
    const claimed = yield* intents.claimForRun({
      runId,
      targetSessionId: SESSION,
      token: "d",
      leaseMs: 5_000
    })
    if (Option.isNone(claimed)) return yield* Effect.dieMessage("nothing to deliver")
    yield* intents.resolve({ intentId: claimed.value.intentId, token: "d", resolution, messageId })
    return claimed.value.intentId
  })

const row = ({ intents }: Stores, intentId: string) =>
  Effect.flatMap(intents.get(intentId), (found) =>
    Option.match(found, {
      onNone: () => Effect.dieMessage(`intent ${intentId} missing`),
      onSome: (intent) => Effect.succeed(intent)
    })
  )

const reconcile = (s: Stores) => reconcileDebts(SESSION).pipe(Effect.provide(s.context))

describe("a claim-loss intent beside the run's end", () => {
  it.scoped(
    "an end that owes its own successor covers it: never eligible, resolved with the end's message",
    () =>
      Effect.gen(function* () {
        const s = yield* stores
        const { ended, lostId } = yield* claimLossBesideEnd(s, "r1", "failed")
        const failedId = yield* endIntent(s, ended)
        const first = yield* reconcile(s)
        expect(first.madeEligible).toEqual([])
        expect((yield* row(s, lostId)).eligibleAt).toBeNull()
        // The end's fallback goes out (its intent is the only eligible one).
        const claimed = yield* s.intents.claimEligibleForSession({
          targetSessionId: SESSION,
          limit: 10,
          token: "f",
          leaseMs: 5_000
        })
        expect(claimed.map((i) => i.intentId)).toEqual([failedId])
        yield* s.intents.resolve({ intentId: failedId, token: "f", resolution: "fallback", messageId: "m-1" })
        const second = yield* reconcile(s)
        expect(second.answered).toEqual([lostId])
        const lost = yield* row(s, lostId)
        expect([lost.resolution, lost.resolutionMessageId, lost.eligibleAt]).toEqual([
          "fallback",
          "m-1",
          null
        ])
        // Idempotent: a later pass finds nothing to do.
        expect(yield* reconcile(s)).toEqual({ created: [], madeEligible: [], answered: [] })
      })
  )

  it.scoped(
    "a crash before the end's intent was stored: reconciliation creates it, and it covers the claim loss",
    () =>
      Effect.gen(function* () {
        const s = yield* stores
        const { lostId } = yield* claimLossBesideEnd(s, "r1", "timed_out")
        const first = yield* reconcile(s)
        expect(first.created).toHaveLength(1)
        expect(first.madeEligible).toEqual([])
        expect((yield* row(s, lostId)).eligibleAt).toBeNull()
      })
  )

  it.scoped("a presentation that resolved the covered intent is the completed end's message too", () =>
    Effect.gen(function* () {
      const s = yield* stores
      const { ended, lostId } = yield* claimLossBesideEnd(s, "r1", "completed")
      const completedId = yield* endIntent(s, ended)
      // Natural delivery takes the run's oldest pending intent: the claim loss's.
      expect(yield* deliver(s, "r1", "presentation", "m-p")).toBe(lostId)
      const report = yield* reconcile(s)
      expect(report).toEqual({ created: [], madeEligible: [], answered: [completedId] })
      const completed = yield* row(s, completedId)
      expect([completed.resolution, completed.resolutionMessageId, completed.eligibleAt]).toEqual([
        "presentation",
        "m-p",
        null
      ])
    })
  )

  it.scoped(
    "an end that reuses the new owner's own abort covers it: that abort's fallback is the one message",
    () =>
      Effect.gen(function* () {
        const s = yield* stores
        const { lostId } = yield* claimLossBesideEnd(s, "r1", "cancelled", false, true)
        // B crashed before storing its cancel's intent: reconciliation creates it, eligible.
        const first = yield* reconcile(s)
        expect(first.created).toHaveLength(1)
        expect(first.madeEligible).toEqual([])
        const claimed = yield* s.intents.claimEligibleForSession({
          targetSessionId: SESSION,
          limit: 10,
          token: "f",
          leaseMs: 5_000
        })
        expect(claimed.map((i) => i.cause)).toEqual(["agentCancelled"])
        const cancelId = claimed[0]?.intentId ?? ""
        yield* s.intents.resolve({ intentId: cancelId, token: "f", resolution: "fallback", messageId: "m-c" })
        expect((yield* reconcile(s)).answered).toEqual([lostId])
        const lost = yield* row(s, lostId)
        expect([lost.resolution, lost.resolutionMessageId]).toEqual(["fallback", "m-c"])
      })
  )

  it.scoped(
    "an end that owes nothing (a direct user cancel) retires the claim loss: no fallback, on any pass",
    () =>
      Effect.gen(function* () {
        const s = yield* stores
        const { lostId } = yield* claimLossBesideEnd(s, "r1", "cancelled")
        expect(yield* reconcile(s)).toEqual({ created: [], madeEligible: [], answered: [] })
        yield* TestClock.adjust("1 hour")
        expect(yield* reconcile(s)).toEqual({ created: [], madeEligible: [], answered: [] })
        // Retired: pending, never eligible, so no fallback pass can claim it.
        const lost = yield* row(s, lostId)
        expect([lost.resolvedAt, lost.eligibleAt]).toEqual([null, null])
        const claimed = yield* s.intents.claimEligibleForSession({
          targetSessionId: SESSION,
          limit: 10,
          token: "f",
          leaseMs: 5_000
        })
        expect(claimed).toEqual([])
      })
  )

  it.scoped("a handoff that landed on the row is the end's own intent: eligible, nothing covered", () =>
    Effect.gen(function* () {
      const s = yield* stores
      const { ended, lostId } = yield* claimLossBesideEnd(s, "r1", "failed", true)
      expect(yield* endIntent(s, ended)).toBe(lostId)
      yield* s.intents.makeEligible({ intentId: lostId })
      const report = yield* reconcile(s)
      expect(report).toEqual({ created: [], madeEligible: [], answered: [] })
      expect((yield* s.intents.list({ runId: "r1", limit: 10 })).map((i) => i.cause)).toEqual(["claimLost"])
    })
  )

  it.scoped("a workflow prompt that answered the claim loss before the end does not answer the end", () =>
    Effect.gen(function* () {
      const s = yield* stores
      const { ended, lostId } = yield* claimLossBesideEnd(s, "r1", "failed")
      // B's prompt resolved the claim loss before the run failed; the failure's intent is stored
      // (ineligible: B crashed before making it eligible).
      expect(yield* deliver(s, "r1", "workflowPrompt", "m-w")).toBe(lostId)
      const request = owedIntent(ended)
      if (request === null) return yield* Effect.dieMessage("the end owes an intent")
      const identified = yield* identify(request)
      yield* s.intents.ensure({ ...identified.ensure, eligible: false })
      const report = yield* reconcile(s)
      expect(report).toEqual({ created: [], madeEligible: [identified.intentId], answered: [] })
    })
  )
})
