import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCommand } from "../../src/app/command-actions.ts"
import { afterSettle, classifySettle, onSessionStart, onShutdown } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool-actions.ts"
import { Engine } from "../../src/engine/engine.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { buildApp, eventually, FALLBACK, PRESENTATION, sentOfType, STEP } from "./support.ts"

const intents = Effect.flatMap(TurnIntentStore, (store) => store.list({ limit: 100 }))
const runIdOf = (details: Readonly<Record<string, unknown>>) => {
  const runId = details.runId
  if (typeof runId !== "string") throw new Error("no run id")
  return runId
}

describe("/workflow command", () => {
  it.live("start asks to activate now; direct cancel creates no intent and starts no turn", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runCommand({ _tag: "start", workflow: "greet", input: null })
      expect(started.isError).toBe(false)
      expect(started.activate).toBe(true)
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      yield* fake.settle()
      const turnsBefore = yield* fake.triggeredTurns
      const cancelled = yield* runCommand({ _tag: "cancel", runId: undefined })
      expect(cancelled.text).toMatch(/Cancelled/)
      yield* afterSettle(false)
      expect(yield* fake.aborts).toBe(0)
      expect(yield* fake.triggeredTurns).toBe(turnsBefore)
      expect(yield* intents).toHaveLength(0)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("status lists the session's runs; list and errors are readable", () =>
    Effect.gen(function* () {
      expect((yield* runCommand({ _tag: "status", runId: undefined })).text).toMatch(/No workflow runs/)
      const started = yield* runCommand({ _tag: "start", workflow: "greet", input: { a: 1 } })
      const runId = runIdOf(started.details)
      expect((yield* runCommand({ _tag: "status", runId: undefined })).text).toContain(runId)
      expect((yield* runCommand({ _tag: "status", runId })).text).toContain('"state"')
      expect((yield* runCommand({ _tag: "list" })).text).toContain("greet")
      const bad = yield* runCommand({ _tag: "start", workflow: "missing", input: null })
      expect(bad.isError).toBe(true)
      expect(bad.activate).toBe(false)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})

describe("session hooks", () => {
  it.live(
    "the user's Escape during a step holds the run: no intent, no automatic turn; resume continues",
    () =>
      Effect.gen(function* () {
        const fake = yield* PiSessionFake
        const engine = yield* Engine
        const started = yield* runTool({ _tag: "start", workflow: "greet" })
        const runId = runIdOf(started.details)
        yield* afterSettle(false)
        yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
        // Escape: Pi aborts the turn; this process did not ask for it.
        const outcome = yield* classifySettle(true)
        expect(outcome.userHold).toBe(true)
        yield* fake.setUserHold(true)
        yield* fake.settle({ aborted: true })
        yield* afterSettle(true)
        expect(yield* intents).toHaveLength(0)
        expect(yield* fake.aborts).toBe(0)
        const held = yield* engine.status(runId)
        expect(held.pauseRequested || held.state === "waiting").toBe(true)
        const resumed = yield* runCommand({ _tag: "resume", runId })
        expect(resumed.isError).toBe(false)
        expect(resumed.releaseHold).toBe(true)
        const after = yield* engine.status(runId)
        expect(after.pauseRequested).toBe(false)
        expect(after.state).toBe("running")
      }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("an aborted settle with no active workflow turn is not a hold", () =>
    Effect.gen(function* () {
      expect((yield* classifySettle(true)).userHold).toBe(false)
      expect((yield* classifySettle(false)).userHold).toBe(false)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("session start delivers what is owed and activates a queued launch; shutdown parks quietly", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runTool({ _tag: "start", workflow: "greet" })
      yield* onSessionStart
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      yield* fake.settle()
      yield* onShutdown
      expect(yield* intents).toHaveLength(0)
      expect(yield* sentOfType(PRESENTATION)).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})
