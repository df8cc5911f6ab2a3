/**
 * A run cancelled while no step turn of it is open (queued, or running a compute step): the
 * agent's cancel gets the run's one terminal turn after the current turn settles; the user's
 * `/workflow cancel` stays quiet.
 * Fake session, real SQLite file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import { Engine } from "../../src/engine/engine.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { buildApp, eventually, FALLBACK, PRESENTATION, sentOfType, STEP } from "../app/support.ts"

const intents = Effect.orDie(Effect.flatMap(TurnIntentStore, (store) => store.list({ limit: 100 })))
/** What starts or answers a model turn (the user's final notification is neither). */
const turnMessages = Effect.map(
  Effect.flatMap(PiSessionFake, (fake) => fake.sent),
  (sent) => sent.filter((r) => r.message.customType !== NOTIFICATION_TYPE)
)
const stateOf = (runId: string) =>
  Effect.orDie(
    Effect.map(
      Effect.flatMap(Engine, (engine) => engine.status(runId)),
      (s) => s.state
    )
  )

describe("cancelling a queued run", () => {
  it.live("by the agent: one terminal turn after the turn settles, never a second", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      const runId = String(started.details.runId)
      const cancelled = yield* runTool({ _tag: "cancel", runId })
      expect(cancelled.text).toMatch(/Cancelled/)
      expect(yield* stateOf(runId)).toBe("cancelled")
      // Nothing goes into the turn that made the call; the fallback follows its settle.
      expect(yield* turnMessages).toEqual([])
      yield* afterSettle(false)
      const [fallback] = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      expect(fallback?.message.details).toMatchObject({
        runId,
        cause: "agentCancelled",
        observedState: "cancelled",
        reasonKind: "agentCancelled"
      })
      // Cancelled means stopped: the terminal turn advises stopping and offers no restart of it.
      expect(fallback?.message.content).toContain("Default: stop. The agent cancelled this run")
      expect(fallback?.message.content).not.toContain("prefer one safe restart")
      expect(fallback?.message.content).not.toContain(`{"action": "restart", "runId": "${runId}"}`)
      expect((yield* intents).map((i) => [i.runId, i.cause, i.resolution])).toEqual([
        [runId, "agentCancelled", "fallback"]
      ])
      // The run never started a step; later settles and a new session start owe nothing more.
      yield* fake.settle()
      yield* afterSettle(false)
      yield* Effect.orDie(onSessionStart)
      expect(yield* sentOfType(STEP)).toHaveLength(0)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(1)
      expect(yield* sentOfType(PRESENTATION)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("by the user (`/workflow cancel`): quiet, and `restart` is refused", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      const runId = String(started.details.runId)
      const cancelled = yield* runCommand({ _tag: "cancel", runId })
      expect(cancelled.text).toMatch(/Cancelled/)
      yield* afterSettle(false)
      yield* Effect.orDie(onSessionStart)
      expect(yield* turnMessages).toEqual([])
      expect(yield* fake.triggeredTurns).toBe(0)
      expect(yield* intents).toEqual([])
      const restart = yield* runTool({ _tag: "restart", runId })
      expect(restart.isError).toBe(true)
      expect(restart.text).toContain("the user cancelled this run")
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("by the agent while a compute step runs (no step turn open): one terminal turn", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runTool({ _tag: "start", workflow: "slow" })
      const runId = String(started.details.runId)
      yield* afterSettle(false)
      yield* eventually(stateOf(runId), (state) => state === "running")
      yield* fake.startTurn
      const cancelled = yield* runTool({ _tag: "cancel", runId })
      expect(cancelled.text).toMatch(/Cancelled/)
      expect(yield* fake.aborts).toBe(0)
      yield* fake.settle()
      yield* afterSettle(false)
      const [fallback] = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      expect(fallback?.message.details).toMatchObject({ runId, cause: "agentCancelled" })
      yield* fake.settle()
      yield* afterSettle(false)
      yield* Effect.orDie(onSessionStart)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(1)
    }).pipe(
      Effect.provide(
        buildApp([
          {
            name: "slow",
            startAt: "work",
            nodes: { work: { type: "compute", run: () => new Promise(() => {}) } },
            edges: []
          }
        ])
      ),
      Effect.scoped
    )
  )
})
