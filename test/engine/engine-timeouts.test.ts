/** Every timeout form through the real engine, driven by TestClock (no real waiting). */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import type { SourceEvent } from "../../src/domain/event-policy.ts"
import type { StepContext, TimeoutMs } from "../../src/engine/definition.ts"
import { eventTags, makeHarness, SESSION, waitUntil } from "./support/harness.ts"

const MINUTE = 60_000
/** Long clock jumps run every renewal in order; fewer renewals keep these tests fast. */
const slowLease = { leaseMs: 60 * MINUTE, renewEveryMs: 20 * MINUTE }

/** One agent node, then a compute node that echoes its output. */
const agentFlow = (timeoutMs: TimeoutMs | undefined) => ({
  name: "agent-flow",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "answer", ...(timeoutMs === undefined ? {} : { timeoutMs }) },
    echo: { type: "compute", run: (ctx: StepContext) => ({ echoed: ctx.outputs.ask }) }
  },
  edges: [{ from: "ask", to: "echo" }]
})

/** One compute node that waits until its signal aborts (and records that it did). */
const hangingCompute = (timeoutMs: TimeoutMs | undefined, seen: { started: number; aborted: boolean }) => ({
  name: "hang",
  startAt: "wait",
  nodes: {
    wait: {
      type: "compute",
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      run: (ctx: StepContext) =>
        new Promise((_resolve, reject) => {
          seen.started++
          ctx.signal.addEventListener("abort", () => {
            seen.aborted = true
            reject(new Error("aborted"))
          })
        })
    }
  },
  edges: []
})

const requestIdOf = (message: {
  readonly message: { readonly details: Readonly<Record<string, unknown>> }
}) => String(message.message.details.requestId)

describe("engine timeouts", () => {
  it.scoped(
    "omitted: the 15-minute default; an agent timeout interrupts the turn and ends the run timed_out",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ definitions: [agentFlow(undefined)] })
        const runId = yield* h.launch("agent-flow")
        const prompt = yield* h.coordinator.take
        yield* TestClock.adjust(15 * MINUTE - 1)
        expect((yield* h.engine.status(runId)).state).toBe("running")
        yield* TestClock.adjust(1)
        const done = yield* h.engine.await(runId)
        expect(done.state).toBe("timed_out")
        expect(done.error).toEqual({
          message: 'node "ask" timed out: timed out after 15m',
          nodeId: "ask",
          original: "timed out after 15m"
        })
        const events = yield* h.events
        expect(eventTags(events)).toEqual(["ActiveTurnInterrupted:timedOut", "RunTerminal:timed_out"])
        const [interrupted, terminal] = events as [SourceEvent, SourceEvent]
        const status = yield* h.engine.status(runId)
        const attemptId = status.stepRecords[0]?.attemptId ?? ""
        const provenance = { cause: "timedOut", nodeId: "ask", attemptId, interruption: 0 }
        expect(interrupted).toMatchObject({ _tag: "ActiveTurnInterrupted", provenance })
        expect(terminal).toMatchObject({
          _tag: "RunTerminal",
          state: "timed_out",
          provenance,
          interruption: 1
        })
        expect(status.stepRecords.map((s) => [s.nodeId, s.outcome, s.timeoutMs])).toEqual([
          ["ask", "timed_out", 900_000]
        ])
        const request = yield* h.store.request(requestIdOf(prompt))
        expect(Option.map(request, (r) => [r.state, r.closedReason])).toEqual(
          Option.some(["closed", "timed_out"])
        )
        const stale = yield* Effect.flip(
          h.engine.submit({ sessionId: SESSION, requestId: requestIdOf(prompt), output: 1 })
        )
        expect(stale._tag === "SubmitRejected" && stale.reason).toBe("stale")
      })
  )

  it.scoped(
    "fixed: a compute node times out at its limit, aborts its signal, run ends with no provenance",
    () =>
      Effect.gen(function* () {
        const seen = { started: 0, aborted: false }
        const h = yield* makeHarness({ definitions: [hangingCompute(5_000, seen)] })
        const runId = yield* h.launch("hang")
        yield* TestClock.adjust(4_999)
        expect((yield* h.engine.status(runId)).state).toBe("running")
        expect(seen.aborted).toBe(false)
        yield* TestClock.adjust(1)
        expect((yield* h.engine.await(runId)).state).toBe("timed_out")
        expect(seen.aborted).toBe(true)
        const events = yield* h.events
        expect(events).toMatchObject([
          { _tag: "RunTerminal", state: "timed_out", provenance: null, interruption: 0 }
        ])
      })
  )

  it.scoped("null: a node finishes long after a short default would have expired", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({
        definitions: [agentFlow(null)],
        config: { defaultTimeoutMs: 1_000, ...slowLease }
      })
      const runId = yield* h.launch("agent-flow")
      const prompt = yield* h.coordinator.take
      yield* TestClock.adjust(10 * 60 * MINUTE)
      const waiting = yield* h.engine.status(runId)
      expect([waiting.state, waiting.openRequestId]).toEqual(["running", requestIdOf(prompt)])
      yield* h.engine.submit({ sessionId: SESSION, requestId: requestIdOf(prompt), output: "late but fine" })
      const done = yield* h.engine.await(runId)
      expect([done.state, done.result]).toEqual(["completed", { echoed: "late but fine" }])
      expect((yield* h.engine.status(runId)).stepRecords[0]?.timeoutMs).toBeNull()
      expect(eventTags(yield* h.events)).toEqual(["RunTerminal:completed"])
    })
  )

  it.scoped("callback returning a number: that limit applies", () =>
    Effect.gen(function* () {
      const limit = (ctx: StepContext) => (ctx.input as { limit: number }).limit
      const h = yield* makeHarness({ definitions: [agentFlow(limit)] })
      const started = yield* h.engine.start({
        workflow: "agent-flow",
        input: { limit: 2 * MINUTE },
        sessionId: SESSION,
        origin: "command"
      })
      yield* h.engine.activate(SESSION)
      yield* h.coordinator.take
      yield* TestClock.adjust(2 * MINUTE - 1)
      expect((yield* h.engine.status(started.runId)).state).toBe("running")
      yield* TestClock.adjust(1)
      expect((yield* h.engine.await(started.runId)).state).toBe("timed_out")
      expect((yield* h.engine.status(started.runId)).stepRecords[0]?.timeoutMs).toBe(2 * MINUTE)
    })
  )

  it.scoped("callback returning null (sync or async): no deadline", () =>
    Effect.gen(function* () {
      for (const callback of [() => null, async () => null]) {
        const h = yield* makeHarness({
          definitions: [agentFlow(callback)],
          config: { defaultTimeoutMs: 1_000, ...slowLease }
        })
        const runId = yield* h.launch("agent-flow")
        const prompt = yield* h.coordinator.take
        yield* TestClock.adjust(24 * 60 * MINUTE)
        expect((yield* h.engine.status(runId)).state).toBe("running")
        yield* h.engine.submit({ sessionId: SESSION, requestId: requestIdOf(prompt), output: 1 })
        expect((yield* h.engine.await(runId)).state).toBe("completed")
      }
    })
  )

  it.scoped("callback taking over 30 s: the node fails with a clear error (failed, not timed_out)", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [agentFlow(() => new Promise<number>(() => {}))] })
      const runId = yield* h.launch("agent-flow")
      yield* TestClock.adjust(29_999)
      expect((yield* h.engine.status(runId)).state).toBe("running")
      yield* TestClock.adjust(1)
      const done = yield* h.engine.await(runId)
      expect(done.state).toBe("failed")
      expect(done.error?.original).toBe("timeoutMs callback did not resolve within 30 s")
      // The prompt was never sent: the limit is resolved before the step starts working.
      expect(yield* h.coordinator.delivered).toEqual([])
      expect(yield* h.events).toMatchObject([{ _tag: "RunTerminal", state: "failed", provenance: null }])
    })
  )

  it.scoped("callback returning an invalid value: the node fails naming the value", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [agentFlow(() => 0)] })
      const runId = yield* h.launch("agent-flow")
      const done = yield* h.engine.await(runId)
      expect(done.state).toBe("failed")
      expect(done.error?.original).toMatch(/timeoutMs callback returned an invalid value: .*got 0/)
    })
  )

  it.scoped("null: user cancellation stops the node at once and aborts its signal", () =>
    Effect.gen(function* () {
      const seen = { started: 0, aborted: false }
      const h = yield* makeHarness({ definitions: [hangingCompute(null, seen)] })
      const runId = yield* h.launch("hang", {}, "command")
      yield* waitUntil(() => seen.started === 1)
      const cancelled = yield* h.engine.cancel(runId, { by: "user" })
      expect(cancelled.state).toBe("cancelled")
      expect(seen.aborted).toBe(true)
      expect(eventTags(yield* h.events)).toEqual(["Quiet:directCancel"])
      expect((yield* h.engine.status(runId)).stepRecords.map((s) => s.outcome)).toEqual(["cancelled"])
    })
  )

  it.scoped("null: agent cancellation during an open request interrupts the turn, then ends cancelled", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [agentFlow(null)] })
      const runId = yield* h.launch("agent-flow")
      yield* h.coordinator.take
      const cancelled = yield* h.engine.cancel(runId, { by: "agent" })
      expect(cancelled.state).toBe("cancelled")
      expect(eventTags(yield* h.events)).toEqual([
        "ActiveTurnInterrupted:agentCancelled",
        "RunTerminal:cancelled"
      ])
    })
  )

  it.scoped("null: park, shutdown and resume still work", () =>
    Effect.gen(function* () {
      const seen = { started: 0, aborted: false }
      const h = yield* makeHarness({ definitions: [hangingCompute(null, seen)] })
      const runId = yield* h.launch("hang", {}, "command")
      yield* waitUntil(() => seen.started === 1)
      const parked = yield* h.engine.park(runId, "operator")
      expect([parked.state, parked.parkedReason, parked.claimed]).toEqual(["running", "operator", false])
      expect(seen.aborted).toBe(true)
      seen.aborted = false
      yield* h.engine.resume(runId)
      yield* waitUntil(() => seen.started === 2)
      yield* h.engine.shutdown
      expect(seen.aborted).toBe(true)
      const status = yield* h.engine.status(runId)
      expect([status.state, status.parkedReason]).toEqual(["running", "shutdown"])
      expect(status.stepRecords.map((s) => s.interrupted)).toEqual(["parked: operator", "parked: shutdown"])
      expect(eventTags(yield* h.events)).toEqual(["Quiet:shutdown"])
    })
  )
})
