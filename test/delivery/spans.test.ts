/**
 * The abort and sync paths are visible to a downstream tracer: one interruption and its
 * successor turn produce named spans carrying the run, the session and the intent, and log
 * lines on those paths carry the same keys.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Logger } from "effect"
import { type RecordedSpan as Recorded, recordingTracer } from "../support/recording-tracer.ts"
import { interrupted, makeHarness, provenance, run, terminal } from "../conformance/harness.ts"

describe("spans and log annotations on the abort and sync paths", () => {
  it.scoped("one interruption → its successor turn: named spans with the run, session and intent", () =>
    Effect.gen(function* () {
      const spans: Array<Recorded> = []
      const native = yield* Effect.tracer
      const traced = Effect.withTracer(recordingTracer(native, spans))
      const h = yield* makeHarness()
      yield* h.fake.startTurn
      const { intentId } = yield* traced(
        h.events.publish(interrupted("agentCancelled", { reason: "agent called workflow cancel" }))
      )
      yield* traced(h.events.publish(terminal("cancelled", provenance("agentCancelled"))))
      const report = yield* traced(h.settle(true))
      expect(report.delivered).toEqual([intentId])

      const names = spans.map((s) => s.name)
      expect(names).toEqual(
        expect.arrayContaining([
          "SourceEvents.publish",
          "Interruptions.abortActiveTurn",
          "Interruptions.persistEligible",
          "Coordinator.onSettled",
          "Coordinator.syncFallbacks",
          "Coordinator.sendFallback"
        ])
      )
      const publish = spans.find((s) => s.name === "SourceEvents.publish")
      expect(publish?.attributes.get("runId")).toBe(run().runId)
      expect(publish?.attributes.get("sessionId")).toBe(run().targetSessionId)
      expect(publish?.attributes.get("intentId")).toBe(intentId)
      const send = spans.find((s) => s.name === "Coordinator.sendFallback")
      expect(send?.attributes.get("intentId")).toBe(intentId)
      expect(send?.attributes.get("runId")).toBe(run().runId)
      expect(spans.find((s) => s.name === "Coordinator.syncFallbacks")?.attributes.get("trigger")).toBe(
        "settled"
      )
    })
  )

  it.scoped("a log line on the sync path carries the session, the run and the intent", () =>
    Effect.gen(function* () {
      const annotations: Array<Record<string, unknown>> = []
      const logger = Logger.make(({ annotations: current }) => {
        annotations.push(Object.fromEntries(HashMap.toEntries(current)))
      })
      const h = yield* makeHarness()
      // The warning of a failed send, logged inside the pass, carries the session, run and intent.
      const { intentId } = yield* h.events.publish(terminal("failed", null, { reason: "boom" }))
      yield* h.fake.failNextSends(1)
      yield* h.coordinator
        .syncFallbacks("periodic")
        .pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      expect(annotations).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            sessionId: run().targetSessionId,
            runId: run().runId,
            intentId,
            trigger: "periodic"
          })
        ])
      )
    })
  )
})
