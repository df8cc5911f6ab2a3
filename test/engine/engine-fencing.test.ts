/**
 * Claim transfer between two runners on one database file (two layers, two connections). The
 * old runner stalls past its lease, the new one takes over; the old one then detects the loss
 * (on a write, or on renewal), writes nothing under the lost claim (only the unfenced handoff
 * provenance of the turn it aborts), and reports claimLost without a terminal event.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { eventTags, makeHarness, SESSION } from "./support/harness.ts"

const MINUTE = 60_000

const flow = {
  name: "handoff",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "answer", timeoutMs: MINUTE },
    finish: {
      type: "compute",
      run: (ctx: { outputs: Record<string, unknown> }) => ({ answer: ctx.outputs.ask })
    }
  },
  edges: [{ from: "ask", to: "finish" }]
}

const details = (message: { readonly message: { readonly details: Readonly<Record<string, unknown>> } }) =>
  message.message.details as { requestId: string; attemptId: string }

describe("fencing after claim loss (two runners, one file)", () => {
  it.scoped(
    "the stalled runner's timeout write is fenced off; the new owner reruns the node and finishes",
    () =>
      Effect.gen(function* () {
        // The deadline is durable (a takeover keeps A's start), so B's visit resolves a longer
        // limit: only A's timeout fires within the test, and its write must be fenced off.
        let resolved = 0
        const stalledFlow = {
          ...flow,
          nodes: {
            ...flow.nodes,
            ask: {
              type: "agent",
              prompt: "answer",
              timeoutMs: () => (resolved++ === 0 ? MINUTE : 60 * MINUTE)
            }
          }
        }
        // Runner A never renews within the test: it stands for a process that stalled.
        const a = yield* makeHarness({
          definitions: [stalledFlow],
          config: { leaseMs: 30_000, renewEveryMs: 10 * 60 * MINUTE }
        })
        const b = yield* makeHarness({
          definitions: [stalledFlow],
          filename: a.filename,
          config: { leaseMs: 30_000, renewEveryMs: 10_000 }
        })
        const runId = yield* a.launch("handoff")
        const promptA = details(yield* a.coordinator.take)
        const busy = yield* Effect.flip(b.engine.resume(runId))
        expect(busy._tag).toBe("RunBusy")
        yield* TestClock.adjust(31_000)
        const taken = yield* b.engine.resume(runId)
        expect(taken.claimed).toBe(true)
        const promptB = details(yield* b.coordinator.take)
        expect(promptB.requestId).not.toBe(promptA.requestId)
        expect(promptB.attemptId).not.toBe(promptA.attemptId)
        const before = {
          run: Option.getOrThrow(yield* b.store.get(runId)),
          steps: yield* b.store.steps(runId)
        }
        // A's node times out at 60 s: recording it needs the claim A no longer holds.
        yield* TestClock.adjust(29_000)
        yield* a.engine.await(runId)
        // B's prompt already went to the session: it is the successor of A's turn, so A stores no
        // claim-loss intent (none beside the run's own end, seed 9407), but still stops its turn.
        expect(eventTags(yield* a.events)).toEqual(["ActiveTurnInterrupted:claimLost:superseded"])
        const after = {
          run: Option.getOrThrow(yield* b.store.get(runId)),
          steps: yield* b.store.steps(runId)
        }
        // A writes nothing (its handoff is superseded by B's request); only B's renewals moved.
        expect(after.run.abortPending).toBe(false)
        const unchanged = (run: typeof after.run) => ({
          ...run,
          claimExpiresAt: 0,
          abort: null,
          abortPending: false,
          interruptions: 0,
          updatedAt: ""
        })
        expect({ ...after, run: unchanged(after.run) }).toEqual({ ...before, run: unchanged(before.run) })
        expect(after.steps.map((s) => [s.attemptId, s.outcome, s.interrupted])).toEqual([
          [promptA.attemptId, null, "superseded: the run was taken over"],
          [promptB.attemptId, null, null]
        ])
        // A late answer to A's prompt is stale; B's prompt completes the run.
        const stale = yield* Effect.flip(
          a.engine.submit({ sessionId: SESSION, requestId: promptA.requestId, output: 1 })
        )
        expect(stale._tag === "SubmitRejected" && stale.reason).toBe("stale")
        yield* b.engine.submit({ sessionId: SESSION, requestId: promptB.requestId, output: 42 })
        const done = yield* b.engine.await(runId)
        expect([done.state, done.result]).toEqual(["completed", { answer: 42 }])
        expect((yield* b.coordinator.take).kind).toBe("presentation")
        expect(eventTags(yield* b.events)).toEqual(["RunTerminal:completed"])
      })
  )

  it.scoped("claim loss found by lease renewal stops the runner; a submission to it is refused", () =>
    Effect.gen(function* () {
      const slowFlow = {
        ...flow,
        nodes: { ...flow.nodes, ask: { type: "agent", prompt: "answer", timeoutMs: null } }
      }
      const a = yield* makeHarness({
        definitions: [slowFlow],
        config: { leaseMs: 30_000, renewEveryMs: 60_000 }
      })
      const b = yield* makeHarness({
        definitions: [slowFlow],
        filename: a.filename,
        config: { leaseMs: 30_000, renewEveryMs: 10_000 }
      })
      const runId = yield* a.launch("handoff")
      const promptA = details(yield* a.coordinator.take)
      yield* TestClock.adjust(31_000)
      yield* b.engine.resume(runId)
      const promptB = details(yield* b.coordinator.take)
      yield* TestClock.adjust(29_000)
      yield* a.engine.await(runId)
      // B's prompt is already out: A's claim loss is superseded: its turn stops, no intent.
      expect(eventTags(yield* a.events)).toEqual(["ActiveTurnInterrupted:claimLost:superseded"])
      const status = yield* b.engine.status(runId)
      expect([status.state, status.openRequestId, status.claimed]).toEqual([
        "running",
        promptB.requestId,
        true
      ])
      const refused = yield* Effect.flip(
        a.engine.submit({ sessionId: SESSION, requestId: promptB.requestId, output: 1 })
      )
      expect(refused._tag === "SubmitRejected" && refused.reason).toBe("notActive")
      expect(promptA.requestId).not.toBe(promptB.requestId)
    })
  )

  it.scoped("a submission that races a takeover is fenced: ClaimLost, nothing written", () =>
    Effect.gen(function* () {
      const slowFlow = {
        ...flow,
        nodes: { ...flow.nodes, ask: { type: "agent", prompt: "answer", timeoutMs: null } }
      }
      const a = yield* makeHarness({
        definitions: [slowFlow],
        config: { leaseMs: 30_000, renewEveryMs: 60 * MINUTE }
      })
      const runId = yield* a.launch("handoff")
      const promptA = details(yield* a.coordinator.take)
      yield* TestClock.adjust(31_000)
      // Another process takes the claim directly (its runner has not superseded the attempt yet).
      yield* a.store.claim({ runId, token: "other-runner", leaseMs: 30_000, mode: "resume" })
      const lost = yield* Effect.flip(
        a.engine.submit({ sessionId: SESSION, requestId: promptA.requestId, output: 1 })
      )
      expect(lost._tag).toBe("ClaimLost")
      yield* a.engine.await(runId)
      expect(eventTags(yield* a.events)).toEqual(["ActiveTurnInterrupted:claimLost"])
      const request = Option.getOrThrow(yield* a.store.request(promptA.requestId))
      expect(request.state).toBe("open")
      expect((yield* a.store.steps(runId)).map((s) => s.outcome)).toEqual([null])
    })
  )

  it.scoped("cancel from another process is recorded and applied by the owner at its next renewal", () =>
    Effect.gen(function* () {
      const a = yield* makeHarness({ definitions: [flow], config: { leaseMs: 30_000, renewEveryMs: 10_000 } })
      const b = yield* makeHarness({ definitions: [flow], filename: a.filename })
      const runId = yield* a.launch("handoff", {}, "command")
      yield* a.coordinator.take
      const requested = yield* b.engine.cancel(runId, { by: "user" })
      expect([requested.state, requested.cancelRequested]).toEqual(["running", "user"])
      expect(yield* b.events).toEqual([])
      yield* TestClock.adjust(10_000)
      const done = yield* a.engine.await(runId)
      // The cancelled row keeps who cancelled it.
      expect([done.state, done.cancelRequested]).toEqual(["cancelled", "user"])
      expect(eventTags(yield* a.events)).toEqual(["Quiet:directCancel"])
    })
  )
})
