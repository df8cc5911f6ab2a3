import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Schema } from "effect"
import { runCommand } from "../../src/app/command.ts"
import { afterSettle, classifySettle, onSessionStart, onShutdown } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { freshLocation } from "../support/backend.ts"
import {
  buildApp,
  eventually,
  FALLBACK,
  greet,
  PRESENTATION,
  sentOfType,
  STEP,
  sessionApp
} from "./support.ts"

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
      const status = yield* runCommand({ _tag: "status", runId })
      // Readable lines for the user; the JSON stays in the details.
      expect(status.text).toMatch(new RegExp(`^Run ${runId} of greet: queued`))
      expect(status.text).toMatch(/^Steps: 0 settled \(the limit is \d+\)$/m)
      expect(status.text).not.toContain('"state"')
      expect(status.details.status).toMatchObject({ runId, state: "queued" })
      expect((yield* runCommand({ _tag: "list" })).text).toContain("greet")
      const bad = yield* runCommand({ _tag: "start", workflow: "missing", input: null })
      expect(bad.isError).toBe(true)
      expect(bad.activate).toBe(false)
      expect(bad.text).not.toMatch(/\(\w+\)/)
      expect(bad.details.error).toBe("WorkflowNotFound")
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live(
    "a start refused for its input says what is wrong and shows a correct call; an unknown workflow lists the loaded ones",
    () =>
      Effect.gen(function* () {
        const refused = yield* runCommand({ _tag: "start", workflow: "release", input: null })
        expect(refused.isError).toBe(true)
        expect(refused.text).toBe(
          'workflow start failed: input of workflow "release" is invalid: the input must be an object (got null); ' +
            'an input it accepts looks like {"version":"…"}\nA correct call: /workflow start release {"version":"…"}'
        )
        const tool = yield* runTool({ _tag: "start", workflow: "release", input: { version: 3 } })
        expect(tool.text).toBe(
          'workflow start failed: input of workflow "release" is invalid: version must be a string (got 3); ' +
            'an input it accepts looks like {"version":"…"}\n' +
            'A correct call: {"action":"start","workflow":"release","input":{"version":"…"}}'
        )
        const unknown = yield* runCommand({ _tag: "start", workflow: "nosuch", input: null })
        expect(unknown.text).toBe(
          'workflow start failed: no workflow named "nosuch" is loaded; the loaded workflows are: greet, release'
        )
        expect(yield* (yield* Engine).list("s1")).toEqual([])
      }).pipe(
        Effect.provide(
          buildApp([
            greet,
            {
              ...greet,
              name: "release",
              input: Schema.Struct({ version: Schema.String, notes: Schema.optional(Schema.String) })
            }
          ])
        ),
        Effect.scoped
      )
  )

  it.live("cancel without an active run says what to do, in plain words", () =>
    Effect.gen(function* () {
      const reply = yield* runCommand({ _tag: "cancel", runId: undefined })
      expect(reply.isError).toBe(true)
      expect(reply.text).toBe(
        "Nothing to cancel: this session has no active workflow run. " +
          "To cancel another run, give its ID: /workflow cancel <runId> (/workflow status lists them)."
      )
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("status of a finished run: steps with outcomes, timing and the last error", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      const started = yield* runCommand({ _tag: "start", workflow: "greet", input: null })
      const runId = runIdOf(started.details)
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      yield* fake.settle()
      yield* runCommand({ _tag: "cancel", runId })
      const status = yield* runCommand({ _tag: "status", runId })
      expect(status.text).toMatch(new RegExp(`^Run ${runId} of greet: cancelled`))
      expect(status.text).toMatch(/^Time: created .*, started .*, ended /m)
      expect(status.text).toMatch(/^ {2}1\. \S+ — cancelled/m)
      expect(status.text).toMatch(/^Last error: cancelled by the user/m)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("cancel while the model works on the run's step stops that turn too, and says so", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runCommand({ _tag: "start", workflow: "greet", input: null })
      yield* afterSettle(false)
      // The step prompt started a turn: the model is working on it (not idle).
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      const turnsBefore = yield* fake.triggeredTurns
      const cancelled = yield* runCommand({ _tag: "cancel", runId: undefined })
      expect(cancelled.text).toMatch(
        /^Cancelled run .*The model's turn on its step was stopped too; no new turn follows\.$/
      )
      expect(yield* fake.aborts).toBe(1)
      yield* fake.settle({ aborted: true })
      expect((yield* classifySettle(true)).userHold).toBe(false)
      yield* afterSettle(false)
      expect(yield* fake.triggeredTurns).toBe(turnsBefore)
      expect(yield* intents).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})

describe("/workflow cancel of a run at a waiting checkpoint", () => {
  const question = {
    name: "question",
    startAt: "ask",
    nodes: { ask: { type: "wait", prompt: "Which colour?" }, use: { type: "compute", run: () => "used" } },
    edges: [{ from: "ask", to: "use" }]
  }

  it.live("while the model's turn runs (the question in front of it): that turn stops too, and says so", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runCommand({ _tag: "start", workflow: "question", input: null })
      yield* afterSettle(false)
      // The question started a turn: the model is working on it (no runner holds a waiting run).
      yield* eventually(sentOfType(PRESENTATION), (sent) => sent.length === 1)
      const cancelled = yield* runCommand({ _tag: "cancel", runId: undefined })
      expect(cancelled.text).toMatch(
        /^Cancelled run .*The model's turn on its step was stopped too; no new turn follows\.$/
      )
      expect(yield* fake.aborts).toBe(1)
      yield* fake.settle({ aborted: true })
      expect((yield* classifySettle(true)).userHold).toBe(false)
      yield* afterSettle(false)
      expect(yield* intents).toHaveLength(0)
    }).pipe(Effect.provide(buildApp([question])), Effect.scoped)
  )
})

describe("/workflow command on another session's run (the user's authority)", () => {
  it.live("status, pause and cancel act on it and say which session owns it", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* sessionApp(location, "sA")
      const b = yield* sessionApp(location, "sB")
      const started = yield* Effect.provide(runCommand({ _tag: "start", workflow: "greet", input: null }), a)
      const runId = runIdOf(started.details)
      const owner = "This run belongs to session sA, not this one."
      const own = yield* Effect.provide(runCommand({ _tag: "status", runId }), a)
      expect(own.text).not.toContain("belongs to session")
      const status = yield* Effect.provide(runCommand({ _tag: "status", runId }), b)
      expect(status.isError).toBe(false)
      expect(status.text).toMatch(new RegExp(`^Run ${runId} of greet: queued`))
      expect(status.text.split("\n").at(-1)).toBe(owner)
      const cancelled = yield* Effect.provide(runCommand({ _tag: "cancel", runId }), b)
      expect(cancelled.isError).toBe(false)
      expect(cancelled.text).toMatch(new RegExp(`^Cancelled run ${runId} .*\n${owner}$`))
      const after = yield* Effect.provide(
        Effect.flatMap(Engine, (engine) => engine.status(runId)),
        a
      )
      expect([after.state, after.error?.message]).toEqual(["cancelled", "cancelled by the user"])
      // The user's cancel from B stops nothing in B and starts no turn anywhere.
      expect(yield* Context.get(b, PiSessionFake).aborts).toBe(0)
      expect(yield* Effect.provide(intents, a)).toHaveLength(0)
    }).pipe(Effect.scoped)
  )

  it.live("pause of another session's running run holds it and names its session", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* sessionApp(location, "sA")
      const b = yield* sessionApp(location, "sB")
      const started = yield* Effect.provide(runTool({ _tag: "start", workflow: "greet" }), a)
      const runId = runIdOf(started.details)
      yield* Effect.provide(afterSettle(false), a)
      yield* Effect.provide(
        eventually(sentOfType(STEP), (steps) => steps.length === 1),
        a
      )
      const paused = yield* Effect.provide(runCommand({ _tag: "pause", runId }), b)
      expect(paused.isError).toBe(false)
      expect(paused.text).toMatch(
        /^Pausing at the next step boundary: .*\nThis run belongs to session sA, not this one\.$/
      )
    }).pipe(Effect.scoped)
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
        // One notice says what happened and what to do.
        const notices = (yield* fake.notifications).map((n) => n.text)
        expect(notices).toEqual([
          `Workflow greet (run ${runId}) is on hold after Escape. /workflow resume continues it; /workflow cancel stops it.`
        ])
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
