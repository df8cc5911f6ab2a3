/** Outcome routing, switches and maxSteps through the real engine. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { StepContext } from "../../src/engine/definition.ts"
import { eventTags, makeHarness, SESSION, waitUntil } from "./support/harness.ts"

const seen = { started: 0 }

/** `work` behaves as the input says; its outcome picks the branch. */
const outcomes = {
  name: "outcomes",
  startAt: "work",
  nodes: {
    work: {
      type: "compute",
      timeoutMs: 1_000,
      run: (ctx: StepContext) => {
        seen.started++
        const mode = (ctx.input as { mode: string }).mode
        if (mode === "fail") throw new Error("disk on fire")
        if (mode === "hang") return new Promise(() => {})
        return { mode }
      }
    },
    onOk: { type: "compute", run: (ctx: StepContext) => ({ branch: "ok", from: ctx.outputs.work }) },
    onFailed: {
      type: "compute",
      run: (ctx: StepContext) => ({ branch: "failed", error: ctx.results.work?.error })
    },
    onTimeout: {
      type: "compute",
      run: (ctx: StepContext) => ({ branch: "timed_out", outcome: ctx.results.work?.outcome })
    },
    onCancel: { type: "compute", run: () => ({ branch: "cancelled" }) }
  },
  edges: [
    {
      from: "work",
      switch: {
        on: "$result.outcome",
        cases: { ok: "onOk", failed: "onFailed", timed_out: "onTimeout", cancelled: "onCancel" }
      }
    }
  ]
}

const launchWith = (h: Effect.Effect.Success<ReturnType<typeof makeHarness>>, input: unknown) =>
  Effect.gen(function* () {
    const started = yield* h.engine.start({ workflow: "outcomes", input, sessionId: SESSION, origin: "tool" })
    yield* h.engine.activate(SESSION)
    return started.runId
  })

describe("routing on outcomes", () => {
  it.scoped("ok, failed and timed_out each follow their case; results carry the error", () =>
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [outcomes] })
      const ok = yield* h.engine.await(yield* launchWith(h, { mode: "fine" }))
      expect([ok.state, ok.result]).toEqual(["completed", { branch: "ok", from: { mode: "fine" } }])
      const failed = yield* h.engine.await(yield* launchWith(h, { mode: "fail" }))
      expect([failed.state, failed.result]).toEqual([
        "completed",
        { branch: "failed", error: "disk on fire" }
      ])
      const hanging = yield* launchWith(h, { mode: "hang" })
      yield* TestClock.adjust(1_000)
      const timedOut = yield* h.engine.await(hanging)
      expect([timedOut.state, timedOut.result]).toEqual([
        "completed",
        { branch: "timed_out", outcome: "timed_out" }
      ])
      const steps = (yield* h.engine.status(hanging)).stepRecords.map((s) => [s.nodeId, s.outcome])
      expect(steps).toEqual([
        ["work", "timed_out"],
        ["onTimeout", "ok"]
      ])
      // A routed compute timeout is no event for the successor-turn core; each run's end is.
      expect(eventTags(yield* h.events)).toEqual([
        "RunTerminal:completed",
        "RunTerminal:completed",
        "RunTerminal:completed"
      ])
    })
  )

  it.scoped("cancellation is checked before routing and never enters the cancelled case", () =>
    Effect.gen(function* () {
      seen.started = 0
      const h = yield* makeHarness({ definitions: [outcomes] })
      const runId = yield* launchWith(h, { mode: "hang" })
      yield* waitUntil(() => seen.started === 1)
      const cancelled = yield* h.engine.cancel(runId, { by: "user" })
      expect(cancelled.state).toBe("cancelled")
      expect((yield* h.engine.status(runId)).stepRecords.map((s) => [s.nodeId, s.outcome])).toEqual([
        ["work", "cancelled"]
      ])
    })
  )

  const plain = (extra: Record<string, unknown> = {}) => ({
    name: "plain",
    startAt: "work",
    ...extra,
    nodes: {
      work: {
        type: "compute",
        timeoutMs: 500,
        run: (ctx: StepContext) => {
          const mode = (ctx.input as { mode: string }).mode
          if (mode === "fail") return Effect.fail(new Error("typed failure"))
          if (mode === "hang") return Effect.never
          return { verdict: mode }
        }
      },
      after: { type: "compute", run: () => "after" },
      other: { type: "compute", run: () => "other" }
    },
    edges: [
      { from: "work", switch: { on: "$output.verdict", cases: { pass: "after" } } },
      { from: "after", to: "other" }
    ]
  })

  it.scoped(
    "failed without a route: the run fails keeping the original error (async failure after start)",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ definitions: [plain()] })
        const started = yield* h.engine.start({
          workflow: "plain",
          input: { mode: "fail" },
          sessionId: SESSION,
          origin: "tool"
        })
        yield* h.engine.activate(SESSION)
        const done = yield* h.engine.await(started.runId)
        expect(done.state).toBe("failed")
        expect(done.error).toEqual({
          message: 'node "work" failed: typed failure',
          nodeId: "work",
          original: "typed failure"
        })
        expect(yield* h.events).toMatchObject([
          {
            _tag: "RunTerminal",
            state: "failed",
            provenance: null,
            interruption: 0,
            nodeId: "work",
            run: { origin: "tool", targetSessionId: SESSION, workflowName: "plain", runId: started.runId }
          }
        ])
      })
  )

  it.scoped(
    "timed_out without a route ends the run timed_out; a missing case fails naming node and value",
    () =>
      Effect.gen(function* () {
        const h = yield* makeHarness({ definitions: [plain()] })
        const hang = yield* h.engine.start({
          workflow: "plain",
          input: { mode: "hang" },
          sessionId: SESSION,
          origin: "tool"
        })
        yield* h.engine.activate(SESSION)
        yield* TestClock.adjust(500)
        expect((yield* h.engine.await(hang.runId)).state).toBe("timed_out")
        const other = yield* h.engine.start({
          workflow: "plain",
          input: { mode: "maybe" },
          sessionId: SESSION,
          origin: "tool"
        })
        yield* h.engine.activate(SESSION)
        const noCase = yield* h.engine.await(other.runId)
        expect([noCase.state, noCase.error?.message]).toEqual([
          "failed",
          'node "work": switch on $output.verdict has no case for value "maybe"'
        ])
        expect(eventTags(yield* h.events)).toEqual(["RunTerminal:timed_out", "RunTerminal:failed"])
      })
  )

  it.scoped("maxSteps bounds a loop", () =>
    Effect.gen(function* () {
      const loop = {
        name: "loop",
        startAt: "a",
        maxSteps: 5,
        nodes: { a: { type: "compute", run: () => 1 }, b: { type: "compute", run: () => 2 } },
        edges: [
          { from: "a", to: "b" },
          { from: "b", to: "a" }
        ]
      }
      const h = yield* makeHarness({ definitions: [loop] })
      const runId = yield* h.launch("loop")
      const done = yield* h.engine.await(runId)
      expect([done.state, done.steps, done.error?.message]).toEqual([
        "failed",
        5,
        'the run reached maxSteps (5) before visiting node "b"'
      ])
      expect((yield* h.engine.status(runId)).stepRecords.map((s) => s.nodeId)).toEqual([
        "a",
        "b",
        "a",
        "b",
        "a"
      ])
    })
  )

  it.scoped(
    "a compute output that is not JSON fails the node; a failing presentation falls back to JSON",
    () =>
      Effect.gen(function* () {
        const odd = {
          name: "odd",
          startAt: "a",
          nodes: { a: { type: "compute", run: () => ({ when: new Date(0) }) } },
          edges: []
        }
        const shown = {
          name: "shown",
          startAt: "a",
          nodes: { a: { type: "compute", run: async () => ({ n: 1 }) } },
          edges: [],
          presentation: () => {
            throw new Error("template bug")
          }
        }
        const h = yield* makeHarness({ definitions: [odd, shown] })
        const failed = yield* h.engine.await(yield* h.launch("odd"))
        expect(failed.error?.original).toBe(
          'compute node "a" returned non-JSON data: output.when is not a plain object'
        )
        const done = yield* h.engine.await(yield* h.launch("shown"))
        expect(done.result).toEqual({ n: 1 })
        const presentation = yield* h.coordinator.take
        expect(presentation.message.content).toBe(
          `Workflow "shown" (run ${done.runId}) completed.\nResult:\n{\n  "n": 1\n}`
        )
      })
  )
})
