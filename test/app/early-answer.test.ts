/**
 * A question answered before its presentation went out is not asked after its answer. A step
 * times out into a wait: the waiting presentation answers the timeout's intent, so it waits for
 * the aborted turn to settle. The user answers with `/workflow answer` meanwhile; the run goes on
 * to its next step, whose prompt answers the intent. The model sees that prompt once, and never
 * the stale question, nor a fallback. The whole app over the fake Pi session and a real database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { buildApp, eventually, FALLBACK, PRESENTATION, sentOfType, STEP } from "./support.ts"

const escalate = {
  name: "escalate",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review the patch.", timeoutMs: 300 },
    ask: { type: "wait", prompt: "The review timed out. Merge anyway?" },
    merge: { type: "agent", prompt: "Merge the patch." }
  },
  edges: [
    { from: "review", switch: { on: "$result.outcome", cases: { ok: "merge", timed_out: "ask" } } },
    { from: "ask", to: "merge" }
  ]
}

const runState = (runId: string) =>
  Effect.map(Effect.orDie(Effect.flatMap(RunStore, (runs) => runs.get(runId))), (run) =>
    Option.match(run, { onNone: () => null, onSome: (r) => [r.state, r.currentNodeId] as const })
  )

describe("an answer before the waiting presentation went out", () => {
  it.live("the next step's prompt answers the intent; the question is never sent after its answer", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runCommand({ _tag: "start", workflow: "escalate", input: null })
      const runId = String(started.details.runId)
      yield* onSessionStart
      yield* eventually(sentOfType(STEP), (sent) => sent.length === 1)
      yield* fake.startTurn
      // The review times out: its turn is aborted and the run waits; the question waits for settle.
      yield* eventually(runState(runId), (state) => state?.[0] === "waiting")
      expect(yield* sentOfType(PRESENTATION)).toEqual([])

      const answered = yield* runCommand({ _tag: "answer", runId, text: "yes" })
      expect(answered.isError).toBe(false)
      yield* eventually(runState(runId), (state) => state?.[1] === "merge")

      yield* fake.settle({ aborted: true })
      yield* afterSettle(false)
      const steps = yield* eventually(sentOfType(STEP), (sent) => sent.length === 2)
      // Time for a stale presentation to go out, were it still on its way.
      yield* Effect.sleep("200 millis")
      yield* afterSettle(false)
      yield* Effect.sleep("100 millis")

      const [intent] = yield* Effect.orDie(
        Effect.flatMap(TurnIntentStore, (store) => store.list({ runId, limit: 10 }))
      )
      expect([intent?.cause, intent?.resolution]).toEqual(["timedOut", "workflowPrompt"])
      expect(steps[1]?.message.details).toMatchObject({
        runId,
        nodeId: "merge",
        turnIntentId: intent?.intentId
      })
      expect(yield* sentOfType(PRESENTATION)).toEqual([])
      expect(yield* sentOfType(FALLBACK)).toEqual([])
    }).pipe(Effect.provide(buildApp([escalate])), Effect.scoped)
  )
})
