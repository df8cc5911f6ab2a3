/**
 * The live status line of interactive Pi over the whole app (real SQLite file, fake Pi session):
 * it appears once a run's step starts, says the workflow, node, elapsed time, time left to the
 * step's limit and the run's condition, follows the run (pause requested), and is cleared when
 * the run ends. Without Pi's terminal UI (RPC, print) nothing is drawn.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import * as App from "../../src/app/layers.ts"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle } from "../../src/app/session-hooks.ts"
import { STATUS_LINE_KEY } from "../../src/app/status-line.ts"
import { runTool } from "../../src/app/tool.ts"
import { StepReminderStore } from "../../src/store/step-reminder-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { withTimings } from "../support/timing.ts"
import { eventually, lastRequestId, STEP, sentOfType } from "./support.ts"

const EIGHT_HOURS = 8 * 3_600_000
const slow = {
  name: "slow",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "Say hello.", timeoutMs: EIGHT_HOURS } },
  edges: []
}

const app = (terminalUi: boolean) =>
  Layer.unwrapEffect(
    Effect.map(tempDbPath, (filename) =>
      App.layer({ database: { filename }, workflows: [slow] }).pipe(
        Layer.provide(
          withTimings({
            syncInterval: null,
            maintenanceInterval: null,
            statusLineTick: Duration.millis(20),
            statusLineRefresh: Duration.millis(100)
          })
        ),
        Layer.provideMerge(layerFake({ sessionId: "s1", terminalUi }))
      )
    )
  )

const line = Effect.map(
  Effect.flatMap(PiSessionFake, (fake) => fake.statusLines),
  (lines) => lines.get(STATUS_LINE_KEY)
)

const runIdOf = Effect.map(
  Effect.flatMap(PiSessionFake, (fake) => fake.sent),
  (sent) => String(sent.find((r) => r.message.customType === STEP)?.message.details.runId)
)

const startSlow = Effect.gen(function* () {
  const started = yield* runTool({ _tag: "start", workflow: "slow" })
  yield* afterSettle(false)
  yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
  return String(started.details.runId)
})

describe("the live status line", () => {
  it.live("shows the run's workflow, node, elapsed time and time left; follows it; clears at its end", () =>
    Effect.gen(function* () {
      yield* startSlow
      const shown = yield* eventually(line, (text) => text !== undefined)
      expect(shown).toMatch(/^workflow slow · ask · \d+s elapsed · (7h 59m|8h) left$/)
      // The status replies show the step's limit and deadline, absolute and remaining.
      const status = yield* runCommand({ _tag: "status", runId: yield* runIdOf })
      expect(status.text).toMatch(/: running\n/)
      expect(status.text).toMatch(/\nDeadline: \d{4}-\S+Z \(in (7h 59m|8h)\)\n/)
      expect(status.text).toMatch(
        /1\. ask — in flight for \S+, limit 8h, deadline \d{4}-\S+Z \(in (7h 59m|8h)\)/
      )
      const tool = yield* runTool({ _tag: "status" })
      expect(tool.text).toMatch(
        /state running · node ask .*\nStep ask: limit 8h, deadline \d{4}-\S+Z \(in (7h 59m|8h)\)\n/
      )
      // The model ended its turn without submit and got a reminder: the line and the status say so.
      const step = (yield* sentOfType(STEP))[0]?.message.details ?? {}
      const taken = yield* Effect.flatMap(StepReminderStore, (store) =>
        store.take({
          runId: String(step.runId),
          nodeId: String(step.nodeId),
          attemptId: String(step.attemptId),
          requestId: String(step.requestId),
          sessionId: "s1",
          ordinal: 1
        })
      )
      expect(taken).toBe(true)
      expect(yield* eventually(line, (text) => text?.includes("waiting for agent") === true)).toMatch(
        /^workflow slow · ask · \d+s elapsed · (7h 59m|8h) left · waiting for agent \(reminder 1 of 2\)$/
      )
      const reminded = yield* runCommand({ _tag: "status", runId: String(step.runId) })
      expect(reminded.text).toMatch(/: waiting for agent \(reminder 1 of 2\)\n/)
      expect((yield* runTool({ _tag: "status" })).text).toContain(
        "state waiting for agent (reminder 1 of 2) · node ask"
      )
      yield* runCommand({ _tag: "pause", runId: undefined })
      expect(yield* eventually(line, (text) => text?.includes("pause requested") === true)).toMatch(
        /^workflow slow · ask · \d+s elapsed · (7h 59m|8h) left · running \(pause requested\)$/
      )
      yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: { hi: 1 } })
      // The step's submit ends the run (its only node): the line goes with it.
      yield* eventually(line, (text) => text === undefined)
      expect((yield* Effect.flatMap(PiSessionFake, (fake) => fake.statusLines)).size).toBe(0)
    }).pipe(Effect.provide(app(true)), Effect.scoped)
  )

  it.live("a cancelled run's line is cleared; without a terminal UI nothing is ever drawn", () =>
    Effect.gen(function* () {
      yield* startSlow
      yield* eventually(line, (text) => text !== undefined)
      yield* runCommand({ _tag: "cancel", runId: undefined })
      yield* eventually(line, (text) => text === undefined)
    }).pipe(
      Effect.provide(app(true)),
      Effect.scoped,
      Effect.zipRight(
        Effect.gen(function* () {
          yield* startSlow
          yield* Effect.sleep(Duration.millis(300))
          expect(yield* Effect.flatMap(PiSessionFake, (fake) => fake.statusLines)).toEqual(new Map())
        }).pipe(Effect.provide(app(false)), Effect.scoped)
      )
    )
  )
})
