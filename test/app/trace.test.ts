/**
 * One agent self-cancel followed in a trace, from the tool call to the fallback: a downstream
 * tracer sees the tool action, the engine, the stores and the successor core as named spans, and
 * the turn's work as one trace: the runner's interruption joins the tool call's trace, and the
 * fallback for its intent continues it (telemetry/turn-traces.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RecordedSpan as Recorded, recordingSpans } from "../support/recording-tracer.ts"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { toolCallTrace } from "../../src/telemetry/turn-traces.ts"
import { Engine } from "../../src/engine/engine.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { buildApp, eventually, FALLBACK, SELF_CANCEL_SPANS, sentOfType, STEP } from "./support.ts"

/** The names of a span and all its descendants. */
const subtree = (spans: ReadonlyArray<Recorded>, root: Recorded): Array<string> => {
  const below = spans.filter((s) => s.parentId === root.spanId)
  return [root.name, ...below.flatMap((child) => subtree(spans, child))]
}

const finder = (spans: ReadonlyArray<Recorded>) => {
  const one = (name: string, where: (s: Recorded) => boolean = () => true) => {
    const found = spans.filter((s) => s.name === name && where(s))
    expect(
      found.map((s) => s.name),
      name
    ).toEqual([name])
    return found[0] as Recorded
  }
  return one
}

/** A greet run waiting for its step, with the spans recorded from here on. */
const startedRun = (spans: Array<Recorded>) =>
  Effect.gen(function* () {
    yield* runTool({ _tag: "start", workflow: "greet" })
    yield* afterSettle(false)
    yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
    spans.length = 0
  })

/** Pi settles the aborted turn; the coordinator sends the fallback. */
const settleToFallback = Effect.gen(function* () {
  yield* (yield* PiSessionFake).settle({ aborted: true })
  yield* afterSettle(false)
  yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
})

describe("a self-cancel in a trace", () => {
  it.live("tool call → engine → abort → intent, then settle → fallback: one trace", () => {
    const spans: Array<Recorded> = []
    return Effect.gen(function* () {
      yield* startedRun(spans)
      yield* runTool({ _tag: "cancel" }).pipe(toolCallTrace("cancel"))
      yield* settleToFallback

      const one = finder(spans)
      // The tool call's root span holds the engine's reads and its cancel.
      const tool = one("workflow.tool")
      expect(tool.parentId).toBeNull()
      const runId = one("Engine.cancel").attributes.get("runId")
      expect(typeof runId).toBe("string")
      expect(Object.fromEntries(tool.attributes)).toMatchObject({
        "workflow.action": "cancel",
        "pi.session.id": "s1",
        "workflow.run.id": runId
      })
      expect(subtree(spans, tool)).toEqual(
        expect.arrayContaining(["WorkflowTool.cancel", "Engine.active", "RunStore.get", "Engine.cancel"])
      )
      // The runner stops the visit in its own fiber: the claim check and the provenance stay in
      // its trace; the interruption it publishes joins the tool call's, linked back to it.
      const interrupt = one("Runner.interrupt", (s) => s.attributes.get("runId") === runId)
      expect(interrupt.attributes.get("cause")).toBe("agentCancelled")
      expect(subtree(spans, interrupt)).toEqual(
        expect.arrayContaining(["RunStore.control", "RunStore.recordInterruption"])
      )
      const interruption = one("workflow.interruption", (s) => s.links.includes(interrupt.spanId))
      expect(interruption.parentId).toBe(tool.spanId)
      expect(interruption.attributes.get("workflow.run.id")).toBe(runId)
      const publish = one("SourceEvents.publish", (s) => s.parentId === interruption.spanId)
      const intentId = publish.attributes.get("intentId")
      expect(typeof intentId).toBe("string")
      expect(subtree(spans, publish)).toEqual(
        expect.arrayContaining(["Interruptions.abortActiveTurn", "TurnIntentStore.ensure"])
      )
      // After the settle, the pass claims the intent, and its fallback continues the intent's
      // trace (linked to the pass): the send and the resolution are the same trace as the call.
      const settled = one("Coordinator.onSettled")
      expect(subtree(spans, settled)).toEqual(
        expect.arrayContaining(["TurnIntentStore.claimEligibleForSession"])
      )
      const pass = one("Coordinator.syncFallbacks", (s) => s.parentId === settled.spanId)
      const send = one("Coordinator.sendFallback")
      expect([send.attributes.get("intentId"), send.attributes.get("runId")]).toEqual([intentId, runId])
      expect(send.attributes.get("workflow.intent.id")).toBe(intentId)
      expect(send.parentId).toBe(interruption.spanId)
      expect(send.links).toEqual([pass.spanId])
      expect(subtree(spans, send)).toEqual(
        expect.arrayContaining(["TurnIntentStore.renew", "TurnIntentStore.resolve"])
      )
      // The run's end (its terminal event makes the same intent eligible) joins the trace too.
      const inTrace = new Set(spans.filter((s) => s.traceId === tool.traceId).map((s) => s.name))
      expect([...inTrace]).toEqual(expect.arrayContaining(SELF_CANCEL_SPANS))
    }).pipe(Effect.provide(buildApp()), Effect.scoped, recordingSpans(spans))
  })

  it.live(
    "without a tool call, the fallback continues the trace of the runner that stored the intent",
    () => {
      const spans: Array<Recorded> = []
      return Effect.gen(function* () {
        yield* startedRun(spans)
        const engine = yield* Engine
        const runId = (yield* sentOfType(STEP))[0]?.message.details?.runId
        if (typeof runId !== "string") throw new Error("no run ID in the step")
        yield* engine.cancel(runId, { by: "agent" })
        yield* settleToFallback

        const one = finder(spans)
        expect(spans.some((s) => s.name === "workflow.interruption")).toBe(false)
        const interrupt = one("Runner.interrupt", (s) => s.attributes.get("runId") === runId)
        const send = one("Coordinator.sendFallback")
        expect(send.parentId).toBe(interrupt.spanId)
        expect(send.traceId).toBe(interrupt.traceId)
      }).pipe(Effect.provide(buildApp()), Effect.scoped, recordingSpans(spans))
    }
  )
})
