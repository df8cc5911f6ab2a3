/** The terminal turn's message on the fake session: the decision block and the card fields. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { PiSessionFake } from "../../src/testing.ts"
import {
  buildApp,
  eventually,
  FALLBACK,
  lastRequestId,
  PRESENTATION,
  sentOfType,
  STEP
} from "../app/support.ts"

const card = (details: Readonly<Record<string, unknown>> | undefined) => ({
  workflowName: details?.workflowName,
  observedState: details?.observedState,
  reasonKind: details?.reasonKind,
  restartCount: details?.restartCount,
  restartLimit: details?.restartLimit
})

describe("terminal turn messages", () => {
  it.live("a completed run's presentation carries the decision (default stop) and the card fields", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: { status: "blocked" } })
      yield* (yield* PiSessionFake).settle()
      const [presentation] = yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
      const message = presentation?.message
      expect(message?.details.runId).toBe(started.details.runId)
      expect(card(message?.details)).toEqual({
        workflowName: "greet",
        observedState: "completed",
        reasonKind: "completed",
        restartCount: 0,
        restartLimit: 3
      })
      expect(message?.content).toContain('"status": "blocked"')
      expect(message?.content).toContain("Default: stop")
      expect(message?.content).toContain("does not show that the user's task is done")
      expect(yield* sentOfType(FALLBACK)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("a failed run's fallback keeps its facts, adds the decision and the card fields", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "crash", input: { scope: "" } })
      const runId = started.details.runId
      if (typeof runId !== "string") throw new Error("no run id")
      yield* afterSettle(false)
      yield* eventually(
        Effect.orDie(Effect.flatMap(Engine, (engine) => engine.status(runId))),
        (s) => s.state === "failed"
      )
      yield* afterSettle(false)
      const [fallback] = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      const message = fallback?.message
      expect(message?.content).toContain("Workflow turn notice from Pi Workflows.")
      expect(message?.content).toContain('- error: node "boom" failed: scope must be a non-empty string')
      expect(message?.content).toContain(`{"action": "restart", "runId": "${runId}"}`)
      expect(message?.content).toContain('"scope": ""')
      expect(message?.details.turnIntentId).toBeTypeOf("string")
      expect(card(message?.details)).toEqual({
        workflowName: "crash",
        observedState: "failed",
        reasonKind: "failed",
        restartCount: 0,
        restartLimit: 3
      })
      // Exactly one terminal turn, however many passes follow.
      yield* (yield* PiSessionFake).settle()
      yield* afterSettle(false)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(1)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})
