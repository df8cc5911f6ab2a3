import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { StepReminderStore } from "../../src/store/step-reminder-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { freshLocation } from "../support/backend.ts"
import { buildApp, eventually, lastRequestId, PRESENTATION, sentOfType, sessionApp, STEP } from "./support.ts"

const REMINDER = "pi-workflows-step-reminder"
const NOTICE = "pi-workflows-notification"

/** The model's turn ends (not aborted) and Pi runs our agent_settled handler. */
const modelAnswersInText = Effect.gen(function* () {
  const fake = yield* PiSessionFake
  yield* fake.settle()
  yield* afterSettle(false, { aborted: false })
})

const startPrompted = Effect.gen(function* () {
  const started = yield* runCommand({ _tag: "start", workflow: "greet", input: null })
  yield* afterSettle(false)
  yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
  return { runId: String(started.details.runId), requestId: yield* lastRequestId }
})

describe("step reminders", () => {
  it.live("a plain-text answer gets exactly 2 reminders, then one passive notice, then quiet", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const { runId, requestId } = yield* startPrompted
      yield* modelAnswersInText
      const first = yield* sentOfType(REMINDER)
      expect(first).toHaveLength(1)
      expect(first[0]?.options).toEqual({ deliverAs: "followUp", triggerTurn: true })
      expect(first[0]?.message.details).toMatchObject({
        schema: "pi-workflows.step-reminder.v1",
        runId,
        nodeId: "ask",
        requestId,
        reminder: 1
      })
      expect(typeof first[0]?.message.details.attemptId).toBe("string")
      const content = first[0]?.message.content ?? ""
      expect(content).toContain(`"requestId": "${requestId}"`)
      expect(content).toContain('"action": "submit"')
      expect(content).toMatch(/limit ends at \d{4}-\d\d-\d\dT.* \(in 15m\)/)
      yield* modelAnswersInText
      const both = yield* sentOfType(REMINDER)
      expect(both.map((r) => r.message.details.reminder)).toEqual([1, 2])
      const turnsBefore = yield* fake.triggeredTurns
      yield* modelAnswersInText
      const notices = yield* sentOfType(NOTICE)
      expect(notices).toHaveLength(1)
      expect(notices[0]?.options.triggerTurn).toBe(false)
      expect(notices[0]?.message.content).toContain(`/workflow status ${runId}`)
      yield* modelAnswersInText
      yield* modelAnswersInText
      expect(yield* sentOfType(REMINDER)).toHaveLength(2)
      expect(yield* sentOfType(NOTICE)).toHaveLength(1)
      expect(yield* fake.triggeredTurns).toBe(turnsBefore)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("an answer after the first reminder completes the run; no more reminders", () =>
    Effect.gen(function* () {
      const { requestId } = yield* startPrompted
      yield* modelAnswersInText
      expect(yield* sentOfType(REMINDER)).toHaveLength(1)
      const submitted = yield* runTool({ _tag: "submit", requestId, output: { hello: "world" } })
      expect(submitted.isError).toBe(false)
      yield* modelAnswersInText
      yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
      yield* modelAnswersInText
      expect(yield* sentOfType(REMINDER)).toHaveLength(1)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("an aborted turn, a pause, a user hold, shutdown and a pending successor get no reminder", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const { runId } = yield* startPrompted
      yield* fake.settle({ aborted: true })
      yield* afterSettle(false, { aborted: true })
      // A held session (Escape) never reminds.
      yield* afterSettle(true, { aborted: false })
      yield* fake.setShuttingDown(true)
      yield* afterSettle(false, { aborted: false })
      yield* fake.setShuttingDown(false)
      // A successor of the run is owed: it comes first.
      const store = yield* TurnIntentStore
      yield* store.ensure(sampleIntent({ runId, targetSessionId: "s1", sourceEventId: "e-pending" }))
      yield* afterSettle(false, { aborted: false })
      expect(yield* sentOfType(REMINDER)).toHaveLength(0)
      const paused = yield* runCommand({ _tag: "pause", runId })
      expect(paused.isError).toBe(false)
      yield* afterSettle(false, { aborted: false })
      expect(yield* sentOfType(REMINDER)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("a reminder Pi wrote (or its row) is never sent again by a restarted or second process", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* sessionApp(location, "s1")
      const { requestId } = yield* Effect.provide(startPrompted, a)
      yield* Effect.provide(modelAnswersInText, a)
      // A second process of the same session (same file) settles at the same moment.
      const b = yield* sessionApp(location, "s1")
      const reminders = yield* Effect.provide(sentOfType(REMINDER), a)
      expect(reminders).toHaveLength(1)
      const attemptId = String(reminders[0]?.message.details.attemptId)
      const rows = yield* Effect.provide(
        Effect.flatMap(StepReminderStore, (store) => store.forAttempt(attemptId)),
        b
      )
      expect(rows.map((r) => [r.ordinal, r.requestId])).toEqual([[1, requestId]])
      // B takes ordinal 1 again: refused, the first taker won.
      const first = rows[0]
      if (first === undefined) throw new Error("no reminder row")
      const again = yield* Effect.provide(
        Effect.flatMap(StepReminderStore, (store) => store.take({ ...first, ordinal: 1 })),
        b
      )
      expect(again).toBe(false)
      // B runs no runner for the run: its settle reminds nothing; A's next one sends reminder 2.
      yield* Effect.provide(modelAnswersInText, b)
      expect(yield* Effect.provide(sentOfType(REMINDER), b)).toHaveLength(0)
      yield* Effect.provide(modelAnswersInText, a)
      expect((yield* Effect.provide(sentOfType(REMINDER), a)).map((r) => r.message.details.reminder)).toEqual(
        [1, 2]
      )
    }).pipe(Effect.scoped)
  )
})
