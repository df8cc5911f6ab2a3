import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Layer, Option, TestClock } from "effect"
import { RunStore, type NewRun } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"
import { sampleFacts, sampleRun } from "../support/fixtures.ts"
import { databaseLayerAt, freshLocation } from "../support/backend.ts"

const openStore = (filename: string) =>
  Effect.map(Layer.build(RunStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(filename)))), (context) =>
    Context.get(context, RunStore)
  )

/** The run store and the turn intent store on one database. */
const openStores = (location: string) =>
  Effect.map(
    Layer.build(
      Layer.merge(RunStoreSql.layer, TurnIntentStoreSql.layer).pipe(
        Layer.provideMerge(databaseLayerAt(location))
      )
    ),
    (context) => ({ runs: Context.get(context, RunStore), intents: Context.get(context, TurnIntentStore) })
  )

const newRun = (runId: string, sessionId = "s1"): NewRun =>
  sampleRun(runId, { targetSessionId: sessionId, input: { topic: "x" } })

const receipt = (runId: string, requestId: string, attemptId: string) => ({
  schema: "pi-workflows.submit-receipt.v1" as const,
  runId,
  requestId,
  nodeId: "first",
  attemptId,
  acceptedAt: "1970-01-01T00:00:00.000Z"
})

describe("RunStore (SQLite)", () => {
  it.scoped("reserve enqueues one run per session and refuses a second without writing", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      const run = yield* store.reserve(newRun("r1"))
      expect(run.state).toBe("queued")
      expect(run.currentNodeId).toBe("first")
      expect(run.input).toEqual({ topic: "x" })
      const second = yield* Effect.either(store.reserve(newRun("r2")))
      expect(Either.isLeft(second) && second.left._tag).toBe("ReservationConflict")
      expect(Either.isLeft(second) && second.left.message).toContain("r1")
      expect(Option.isNone(yield* store.get("r2"))).toBe(true)
      // Another session is independent.
      expect((yield* store.reserve(newRun("r3", "s2"))).state).toBe("queued")
      const queued = yield* store.nextQueued("s1")
      expect(Option.map(queued, (r) => r.runId)).toEqual(Option.some("r1"))
    })
  )

  it.scoped("claims: activate once, resume only without a live claim, never a terminal run", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(newRun("r1"))
      const claimed = yield* store.claim({ runId: "r1", token: "t1", leaseMs: 1_000, mode: "activate" })
      expect(claimed.state).toBe("running")
      expect(claimed.claimToken).toBe("t1")
      const again = yield* Effect.flip(
        store.claim({ runId: "r1", token: "t2", leaseMs: 1_000, mode: "activate" })
      )
      expect(again._tag === "ClaimRefused" && again.reason).toBe("notQueued")
      const held = yield* Effect.flip(
        store.claim({ runId: "r1", token: "t2", leaseMs: 1_000, mode: "resume" })
      )
      expect(held._tag === "ClaimRefused" && held.reason).toBe("held")
      yield* TestClock.adjust(1_001)
      const taken = yield* store.claim({ runId: "r1", token: "t2", leaseMs: 1_000, mode: "resume" })
      expect(taken.claimToken).toBe("t2")
      expect(taken.claims).toBe(2)
      yield* store.settle(
        { runId: "r1", token: "t2" },
        { next: { _tag: "End", state: "completed", result: null } }
      )
      const ended = yield* store.get("r1")
      expect(Option.map(ended, (r) => [r.state, r.result, r.claimToken])).toEqual(
        Option.some(["completed", Option.some(null), null])
      )
      const terminal = yield* Effect.flip(
        store.claim({ runId: "r1", token: "t3", leaseMs: 1_000, mode: "resume" })
      )
      expect(terminal._tag === "ClaimRefused" && terminal.reason).toBe("terminal")
      const missing = yield* Effect.flip(
        store.claim({ runId: "nope", token: "t", leaseMs: 1_000, mode: "resume" })
      )
      expect(missing._tag).toBe("RunNotFound")
    })
  )

  it.scoped("fencing: a runner that lost its claim writes nothing (two connections, one file)", () =>
    Effect.gen(function* () {
      const filename = yield* freshLocation
      const a = yield* openStore(filename)
      const b = yield* openStore(filename)
      yield* a.reserve(newRun("r1"))
      yield* a.claim({ runId: "r1", token: "A", leaseMs: 1_000, mode: "activate" })
      const fenceA = { runId: "r1", token: "A" }
      yield* a.startStep(fenceA, { nodeId: "first", attemptId: "att-a" })
      yield* a.openRequest(fenceA, { requestId: "req-a", nodeId: "first", attemptId: "att-a" })
      // Runner A stalls past its lease; runner B takes the run over.
      yield* TestClock.adjust(5_000)
      yield* b.claim({ runId: "r1", token: "B", leaseMs: 1_000, mode: "resume" })
      const lost = [
        yield* Effect.flip(a.renew(fenceA, 1_000)),
        yield* Effect.flip(a.startStep(fenceA, { nodeId: "first", attemptId: "att-a2" })),
        yield* Effect.flip(
          a.submit(fenceA, {
            requestId: "req-a",
            output: 1,
            receipt: receipt("r1", "req-a", "att-a"),
            timeoutMs: null
          })
        ),
        yield* Effect.flip(a.settle(fenceA, { next: { _tag: "End", state: "failed" } })),
        yield* Effect.flip(
          a.recordInterruption(fenceA, {
            cause: "timedOut",
            nodeId: "first",
            attemptId: "att-a",
            interruption: 0
          })
        )
      ]
      expect(lost.map((e) => e._tag)).toEqual([
        "ClaimLost",
        "ClaimLost",
        "ClaimLost",
        "ClaimLost",
        "ClaimLost"
      ])
      const steps = yield* b.steps("r1")
      expect(steps.map((s) => [s.attemptId, s.outcome])).toEqual([["att-a", null]])
      expect(Option.map(yield* b.request("req-a"), (r) => r.state)).toEqual(Option.some("open"))
      const run = yield* b.get("r1")
      expect(Option.map(run, (r) => [r.state, r.claimToken, r.abort])).toEqual(
        Option.some(["running", "B", null])
      )
      // B's writes go through.
      expect(yield* b.renew({ runId: "r1", token: "B" }, 1_000)).toEqual({
        pauseRequested: false,
        cancelRequested: null
      })
    })
  )

  it.scoped("an end clears an abort its prompt answered, never another one", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      const timedOut = { cause: "timedOut" as const, nodeId: "first", attemptId: "att-1", interruption: 0 }
      const ended = (runId: string, answered: typeof timedOut) =>
        Effect.gen(function* () {
          yield* store.reserve(newRun(runId, runId))
          yield* store.claim({ runId, token: "t", leaseMs: 60_000, mode: "activate" })
          const fence = { runId, token: "t" }
          yield* store.recordInterruption(fence, timedOut)
          // The recovery prompt went out, but its clear did not land: the end carries it.
          return yield* store.settle(fence, {
            next: { _tag: "End", state: "cancelled", answered }
          })
        })
      const cleared = yield* ended("r1", timedOut)
      expect([cleared.abortPending, cleared.abort?.cause]).toEqual([false, "timedOut"])
      // A later interruption on the row (another ordinal) is still owed its successor.
      const kept = yield* ended("r2", { ...timedOut, interruption: 1 })
      expect([kept.abortPending, kept.abort?.interruption]).toEqual([true, 0])
    })
  )

  it.scoped(
    "an abort a prompt answered (its intent resolved workflowPrompt) is not outstanding to a claim, an end or a cancel",
    () =>
      Effect.gen(function* () {
        const { runs, intents } = yield* openStores(yield* freshLocation)
        const timedOut = { cause: "timedOut" as const, nodeId: "first", attemptId: "att-1", interruption: 0 }
        /** A run whose step timed out (abort on the row) under claim `t1`, and that abort's intent. */
        const aborted = (runId: string) =>
          Effect.gen(function* () {
            yield* runs.reserve(newRun(runId, runId))
            yield* runs.claim({ runId, token: "t1", leaseMs: 60_000, mode: "activate" })
            yield* runs.recordInterruption({ runId, token: "t1" }, timedOut)
            return yield* intents.ensure({
              sourceEventId: `source-${runId}`,
              runId,
              workflowRef: "demo@1",
              targetSessionId: runId,
              cause: "timedOut",
              nodeId: "first",
              attemptId: "att-1",
              facts: sampleFacts({ runId, cause: "timedOut", nodeId: "first", attemptId: "att-1" })
            })
          })
        /** The recovery prompt resolves the intent; its runner dies before clearing the row. */
        const answer = (runId: string, intentId: string) =>
          Effect.gen(function* () {
            yield* intents.claimForRun({ runId, targetSessionId: runId, token: "d", leaseMs: 60_000 })
            yield* intents.resolve({ intentId, token: "d", resolution: "workflowPrompt", messageId: "m" })
          })
        const pending = (runId: string) =>
          Effect.map(
            runs.get(runId),
            Option.map((r) => [r.abortPending, r.abort?.cause ?? null])
          )
        const takeOver = (runId: string) =>
          runs.claim({ runId, token: "t2", leaseMs: 60_000, mode: "resume", takeoverFrom: "t1" })

        // A new owner's claim: its memory, read from the row, has no outstanding abort.
        const r1 = yield* aborted("r1")
        yield* answer("r1", r1.intentId)
        expect(yield* pending("r1")).toEqual(Option.some([true, "timedOut"]))
        const taken = yield* takeOver("r1")
        expect([taken.abortPending, taken.abort?.cause]).toEqual([false, "timedOut"])
        // An abort whose intent is still pending stays outstanding across the claim.
        yield* aborted("r2")
        expect((yield* takeOver("r2")).abortPending).toBe(true)

        // An end carrying the answered abort (the runner's memory never heard of the answer).
        const r3 = yield* aborted("r3")
        yield* takeOver("r3")
        yield* answer("r3", r3.intentId)
        const ended = yield* runs.settle(
          { runId: "r3", token: "t2" },
          {
            next: {
              _tag: "End",
              state: "timed_out",
              error: { message: "x", nodeId: "first", original: null },
              abort: timedOut
            }
          }
        )
        expect([ended.state, ended.abortPending]).toEqual(["timed_out", false])

        // The agent's cancel of a run no live runner holds: its own abort, not the answered one.
        const r4 = yield* aborted("r4")
        yield* answer("r4", r4.intentId)
        yield* TestClock.adjust("2 minutes")
        const cancelled = yield* runs.cancel("r4", "agent")
        expect(cancelled._tag).toBe("Cancelled")
        expect(yield* pending("r4")).toEqual(Option.some([true, "agentCancelled"]))

        // An ended row is never rewritten: a refused cancel changes nothing.
        const r5 = yield* aborted("r5")
        yield* runs.settle(
          { runId: "r5", token: "t1" },
          { next: { _tag: "End", state: "failed", error: { message: "x", nodeId: "first", original: null } } }
        )
        yield* answer("r5", r5.intentId)
        expect((yield* runs.cancel("r5", "user"))._tag).toBe("Refused")
        expect(yield* pending("r5")).toEqual(Option.some([true, "timedOut"]))
      })
  )

  it.scoped("recordLimit: the limit on the step in flight, under the claim only", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(newRun("r1"))
      yield* store.claim({ runId: "r1", token: "t", leaseMs: 60_000, mode: "activate" })
      const fence = { runId: "r1", token: "t" }
      yield* store.startStep(fence, { nodeId: "first", attemptId: "att-1" })
      yield* store.recordLimit(fence, { attemptId: "att-1", timeoutMs: 28_800_000 })
      expect((yield* store.steps("r1")).map((s) => [s.outcome, s.timeoutMs])).toEqual([[null, 28_800_000]])
      // Another token, or a step that ended: nothing written, the claim counts as lost.
      const stale = yield* Effect.flip(
        store.recordLimit({ runId: "r1", token: "old" }, { attemptId: "att-1", timeoutMs: 1 })
      )
      expect(stale._tag).toBe("ClaimLost")
      yield* store.settle(fence, {
        attemptId: "att-1",
        step: { _tag: "Interrupted", reason: "parked: shutdown" },
        next: { _tag: "Park", reason: "shutdown" }
      })
      const parked = yield* Effect.flip(store.recordLimit(fence, { attemptId: "att-1", timeoutMs: 1 }))
      expect(parked._tag).toBe("ClaimLost")
      expect((yield* store.steps("r1")).map((s) => s.timeoutMs)).toEqual([28_800_000])
    })
  )

  it.scoped("submit answers the request and ends the step ok in one transaction", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(newRun("r1"))
      yield* store.claim({ runId: "r1", token: "t", leaseMs: 60_000, mode: "activate" })
      const fence = { runId: "r1", token: "t" }
      yield* store.startStep(fence, { nodeId: "first", attemptId: "att-1" })
      yield* store.openRequest(fence, { requestId: "req-1", nodeId: "first", attemptId: "att-1" })
      expect(Option.map(yield* store.get("r1"), (r) => r.openRequestId)).toEqual(Option.some("req-1"))
      const answered = yield* store.submit(fence, {
        requestId: "req-1",
        output: { a: [1, null] },
        receipt: receipt("r1", "req-1", "att-1"),
        timeoutMs: 5_000
      })
      expect(answered.state).toBe("submitted")
      expect(answered.receipt?.attemptId).toBe("att-1")
      const steps = yield* store.steps("r1")
      expect(steps.map((s) => [s.outcome, s.output, s.timeoutMs])).toEqual([
        ["ok", Option.some({ a: [1, null] }), 5_000]
      ])
      const again = yield* Effect.flip(
        store.submit(fence, {
          requestId: "req-1",
          output: 2,
          receipt: receipt("r1", "req-1", "att-1"),
          timeoutMs: 5_000
        })
      )
      expect(again._tag).toBe("RequestNotOpen")
      const run = yield* store.get("r1")
      expect(Option.map(run, (r) => [r.openRequestId, r.stepCount])).toEqual(Option.some([null, 1]))
    })
  )

  it.scoped("pause and cancel act at once without a live claim and only flag a live owner", () =>
    Effect.gen(function* () {
      const store = yield* openStore(yield* freshLocation)
      yield* store.reserve(newRun("r1"))
      expect((yield* store.requestPause("r1"))._tag).toBe("Refused")
      yield* store.claim({ runId: "r1", token: "t", leaseMs: 1_000, mode: "activate" })
      const fence = { runId: "r1", token: "t" }
      yield* store.startStep(fence, { nodeId: "first", attemptId: "att-1" })
      yield* store.openRequest(fence, { requestId: "req-1", nodeId: "first", attemptId: "att-1" })
      const requested = yield* store.requestPause("r1")
      expect([requested._tag, requested.run.pauseRequested]).toEqual(["Requested", true])
      expect(yield* store.renew(fence, 1_000)).toEqual({ pauseRequested: true, cancelRequested: null })
      const flagged = yield* store.cancel("r1", "user")
      expect([flagged._tag, flagged.run.cancelRequested]).toEqual(["Requested", "user"])
      yield* TestClock.adjust(2_000)
      const cancelled = yield* store.cancel("r1", "user")
      expect([cancelled._tag, cancelled.run.state, cancelled.run.error?.message]).toEqual([
        "Cancelled",
        "cancelled",
        "cancelled by the user"
      ])
      expect(Option.map(yield* store.request("req-1"), (r) => [r.state, r.closedReason])).toEqual(
        Option.some(["closed", "cancelled"])
      )
      expect((yield* store.steps("r1")).map((s) => s.outcome)).toEqual(["cancelled"])
      expect((yield* store.cancel("r1", "user"))._tag).toBe("Refused")
      // The session is free again.
      expect((yield* store.reserve(newRun("r2"))).state).toBe("queued")
    })
  )
})
