/**
 * One agent self-cancel followed in a trace, from the tool call to the fallback: a downstream
 * tracer sees the tool action, the engine, the stores and the successor core as named spans,
 * and can join the abort and the fallback by the intent they carry.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type RecordedSpan as Recorded, recordingSpans } from "../support/recording-tracer.ts"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { buildApp, eventually, FALLBACK, sentOfType, STEP } from "./support.ts"

/** The names of a span and all its descendants. */
const subtree = (spans: ReadonlyArray<Recorded>, root: Recorded): Array<string> => {
  const below = spans.filter((s) => s.parentId === root.spanId)
  return [root.name, ...below.flatMap((child) => subtree(spans, child))]
}

describe("a self-cancel in a trace", () => {
  it.live("tool call → engine → stores → abort, then settle → fallback, joined by the intent", () => {
    const spans: Array<Recorded> = []
    return Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runTool({ _tag: "start", workflow: "greet" })
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      spans.length = 0
      yield* runTool({ _tag: "cancel" })
      yield* fake.settle({ aborted: true })
      yield* afterSettle(false)
      yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)

      const named = (name: string) => spans.filter((s) => s.name === name)
      const one = (name: string, where: (s: Recorded) => boolean = () => true) => {
        const found = named(name).filter(where)
        expect(
          found.map((s) => s.name),
          name
        ).toEqual([name])
        return found[0] as Recorded
      }
      // The tool call's span holds the engine's reads and its cancel.
      const tool = one("WorkflowTool.cancel")
      expect(subtree(spans, tool)).toEqual(
        expect.arrayContaining(["Engine.active", "RunStore.get", "Engine.cancel"])
      )
      const runId = one("Engine.cancel").attributes.get("runId")
      expect(typeof runId).toBe("string")
      // The runner stops the visit for that run: the claim check, then the interruption is published
      // (its turn aborted) and its intent stored.
      const interrupt = one("Runner.interrupt", (s) => s.attributes.get("runId") === runId)
      expect(interrupt.attributes.get("cause")).toBe("agentCancelled")
      const below = subtree(spans, interrupt)
      expect(below).toEqual(
        expect.arrayContaining([
          "RunStore.control",
          "SourceEvents.publish",
          "Interruptions.abortActiveTurn",
          "RunStore.recordInterruption",
          "TurnIntentStore.ensure"
        ])
      )
      const publish = spans.find((s) => s.name === "SourceEvents.publish" && s.parentId === interrupt.spanId)
      const intentId = publish?.attributes.get("intentId")
      expect(typeof intentId).toBe("string")
      // After the settle, the coordinator sends the fallback for that same intent and resolves it.
      const settled = one("Coordinator.onSettled")
      const send = one("Coordinator.sendFallback")
      expect([send.attributes.get("intentId"), send.attributes.get("runId")]).toEqual([intentId, runId])
      expect(subtree(spans, settled)).toEqual(
        expect.arrayContaining([
          "TurnIntentStore.claimEligibleForSession",
          "Coordinator.sendFallback",
          "TurnIntentStore.resolve"
        ])
      )
    }).pipe(Effect.provide(buildApp()), Effect.scoped, recordingSpans(spans))
  })
})
