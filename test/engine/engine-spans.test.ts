/**
 * A run is visible to a downstream tracer: the Engine's operations and the runner's step
 * operations are named spans carrying the run (and the node where there is one).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RecordedSpan as Recorded, recordingTracer } from "../support/recording-tracer.ts"
import { makeHarness, SESSION } from "./support/harness.ts"

/** ask (agent) → count (compute) → end */
const askThenCount = {
  name: "ask-count",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "a question" },
    count: { type: "compute", run: () => 1 }
  },
  edges: [{ from: "ask", to: "count" }]
}

describe("spans of a run", () => {
  it.scoped("start → activate → visits → submit → end: Engine and Runner spans with the run", () =>
    Effect.gen(function* () {
      const spans: Array<Recorded> = []
      const traced = Effect.withTracer(recordingTracer(yield* Effect.tracer, spans))
      const h = yield* makeHarness({ definitions: [askThenCount] })
      const runId = yield* traced(h.launch("ask-count"))
      const prompt = yield* h.coordinator.take
      const requestId = String(prompt.message.details.requestId)
      yield* traced(h.engine.submit({ sessionId: SESSION, requestId, output: "yes" }))
      const ended = yield* traced(h.engine.await(runId))
      expect(ended.state).toBe("completed")

      expect(spans.map((s) => s.name)).toEqual(
        expect.arrayContaining([
          "Engine.start",
          "Engine.activate",
          "Engine.submit",
          "Engine.await",
          "Runner.run",
          "Runner.prepare",
          "Runner.boundary",
          "Runner.visit",
          "Runner.settle",
          "Runner.terminal"
        ])
      )
      const named = (name: string) => spans.filter((s) => s.name === name)
      expect(named("Engine.start")[0]?.attributes.get("sessionId")).toBe(SESSION)
      expect(named("Runner.run")[0]?.attributes.get("runId")).toBe(runId)
      expect(named("Runner.boundary").map((s) => s.attributes.get("nodeId"))).toEqual(["ask", "count"])
      expect(named("Runner.visit").map((s) => s.attributes.get("runId"))).toEqual([runId, runId])
      expect(named("Engine.submit")[0]?.attributes.get("requestId")).toBe(requestId)
    })
  )
})
