import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Option } from "effect"
import { afterSettle, classifySettle } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { NotificationStore } from "../../src/store/notification-store.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { PiSessionFake } from "../../src/testing.ts"
import { freshLocation } from "../support/backend.ts"
import {
  buildApp,
  eventually,
  FALLBACK,
  lastRequestId,
  PRESENTATION,
  sentOfType,
  STEP,
  sessionApp
} from "./support.ts"

const intents = Effect.flatMap(TurnIntentStore, (store) => store.list({ limit: 100 }))

describe("workflow tool actions", () => {
  it.live("list names the loaded workflows", () =>
    Effect.gen(function* () {
      const reply = yield* runTool({ _tag: "list" })
      expect(reply.isError).toBe(false)
      expect(reply.text).toContain("greet")
      expect(reply.text).toContain("say hello")
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("start queues; the step arrives after settle; submit completes with one presentation", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      expect(started.isError).toBe(false)
      expect(started.text).toMatch(/queued as run/)
      expect(yield* sentOfType(STEP)).toHaveLength(0)
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      const submitted = yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: { hi: 1 } })
      expect(submitted.isError).toBe(false)
      // The presentation answers the run's terminal turn intent: it goes out once the turn that
      // submitted has settled, and resolves that intent.
      yield* (yield* PiSessionFake).settle()
      const presented = yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(0)
      const owned = yield* eventually(Effect.orDie(intents), (found) =>
        found.every((i) => i.resolvedAt !== null)
      )
      expect(owned.map((i) => [i.cause, i.resolution])).toEqual([["completed", "presentation"]])
      expect(presented[0]?.message.details.turnIntentId).toBe(owned[0]?.intentId)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("a second start while one is queued is a clear tool error and creates nothing", () =>
    Effect.gen(function* () {
      yield* runTool({ _tag: "start", workflow: "greet" })
      const second = yield* runTool({ _tag: "start", workflow: "greet" })
      expect(second.isError).toBe(true)
      // The kind of error is for programs (details); the text is the plain message.
      expect(second.text).toMatch(/^workflow start failed: session \S+ already has workflow run/)
      expect(second.details.error).toBe("ReservationConflict")
      const unknown = yield* runTool({ _tag: "start", workflow: "nope" })
      expect(unknown.details.error).toBe("WorkflowNotFound")
      expect(yield* intents).toHaveLength(0)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("status and cancel without an active run explain themselves", () =>
    Effect.gen(function* () {
      const status = yield* runTool({ _tag: "status" })
      expect(status.isError).toBe(true)
      expect(status.text).toMatch(/no active workflow run/)
      const cancel = yield* runTool({ _tag: "cancel", runId: "missing" })
      expect(cancel.isError).toBe(true)
      const submit = yield* runTool({ _tag: "submit", requestId: "nope", output: 1 })
      expect(submit.text).toMatch(/^workflow submit failed: /)
      expect(submit.details.error).toBe("SubmitRejected")
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("agent cancel during an active step aborts the turn and owes one fallback after settle", () =>
    Effect.gen(function* () {
      const fake = yield* PiSessionFake
      yield* runTool({ _tag: "start", workflow: "greet" })
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      // The step message started the model's workflow turn; the model cancels inside it.
      const status = yield* runTool({ _tag: "status" })
      expect(status.text).toContain("open request")
      const cancelled = yield* runTool({ _tag: "cancel" })
      expect(cancelled.text).toMatch(/Cancelled/)
      expect(yield* fake.aborts).toBe(1)
      const classified = yield* classifySettle(true)
      expect(classified.userHold).toBe(false)
      yield* fake.settle({ aborted: true })
      yield* afterSettle(false)
      yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      const [intent] = yield* intents
      expect(intent?.resolution).toBe("fallback")
      expect(intent?.cause).toBe("agentCancelled")
      // Later settles and passes deliver nothing more.
      yield* fake.settle()
      yield* afterSettle(false)
      expect(yield* sentOfType(FALLBACK)).toHaveLength(1)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )

  it.live("a crash after a successful start owes one fallback with the real failure", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "crash" })
      expect(started.isError).toBe(false)
      yield* afterSettle(false)
      const engine = yield* Engine
      const runId = started.details.runId
      if (typeof runId !== "string") throw new Error("no run id")
      yield* eventually(engine.status(runId).pipe(Effect.orDie), (s) => s.state === "failed")
      yield* afterSettle(false)
      const fallbacks = yield* eventually(sentOfType(FALLBACK), (f) => f.length === 1)
      expect(fallbacks[0]?.message.content).toContain("scope must be a non-empty string")
      expect(Option.isNone(yield* engine.active("s1"))).toBe(true)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})

describe("session ownership: another session's agent cannot act on a run", () => {
  const foreign =
    /^workflow (cancel|status|restart|progress|submit) failed: run \S+ belongs to another Pi session, not this one; the workflow tool cannot \1 it and nothing was changed/

  it.live("B's cancel, status, restart, progress and submit of A's run refuse and change nothing", () =>
    Effect.gen(function* () {
      const location = yield* freshLocation
      const a = yield* sessionApp(location, "sA")
      const b = yield* sessionApp(location, "sB")
      const fakeA = Context.get(a, PiSessionFake)
      const started = yield* Effect.provide(runTool({ _tag: "start", workflow: "greet" }), a)
      const runId = String(started.details.runId)
      yield* Effect.provide(afterSettle(false), a)
      yield* Effect.provide(
        eventually(sentOfType(STEP), (steps) => steps.length === 1),
        a
      )
      const requestId = yield* Effect.provide(lastRequestId, a)
      const durable = Effect.provide(
        Effect.gen(function* () {
          const status = yield* Effect.orDie((yield* Engine).status(runId))
          const runs = yield* Effect.orDie((yield* RunStore).list({ limit: 100 }))
          const notes = yield* Effect.orDie((yield* NotificationStore).list({ state: "all", limit: 100 }))
          return {
            run: [status.state, status.cancelRequested, status.openRequestId, status.steps, status.events],
            runs: runs.map((run) => run.runId),
            intents: yield* Effect.orDie(intents),
            notes
          }
        }),
        a
      )
      const before = yield* durable
      const sentBefore = (yield* fakeA.sent).length

      const replies = yield* Effect.provide(
        Effect.all([
          runTool({ _tag: "cancel", runId }),
          runTool({ _tag: "status", runId }),
          runTool({ _tag: "restart", runId }),
          runTool({ _tag: "progress", requestId, text: "working on A's step" }),
          runTool({ _tag: "submit", requestId, output: { hi: "from B" } })
        ]),
        b
      )
      for (const reply of replies) {
        expect(reply.isError).toBe(true)
        expect(reply.text).toMatch(foreign)
        expect(reply.text.length).toBeLessThanOrEqual(2_000)
        expect(reply.details).toMatchObject({ error: "ForeignRun", runId, ownerSessionId: "sA" })
      }
      // A's runner renews every 100 ms: a cancel request written for it would be seen by now.
      yield* Effect.sleep("400 millis")
      expect(yield* durable).toEqual(before)
      expect(yield* fakeA.aborts).toBe(0)
      expect((yield* fakeA.sent).length).toBe(sentBefore)
      expect(yield* Context.get(b, PiSessionFake).aborts).toBe(0)
      expect(yield* Context.get(b, PiSessionFake).sent).toHaveLength(0)

      // A's own run goes on: A's model answers, and the run completes.
      const submitted = yield* Effect.provide(runTool({ _tag: "submit", requestId, output: { hi: 1 } }), a)
      expect(submitted.isError).toBe(false)
      yield* fakeA.settle()
      yield* Effect.provide(
        eventually(
          Effect.orDie(Effect.flatMap(Engine, (engine) => engine.status(runId))),
          (status) => status.state === "completed"
        ),
        a
      )
      // Ended, A's run is still not B's to restart; nothing is launched.
      const restart = yield* Effect.provide(runTool({ _tag: "restart", runId }), b)
      expect(restart.text).toMatch(foreign)
      const runs = yield* Effect.provide(
        Effect.orDie(Effect.flatMap(RunStore, (store) => store.list({ limit: 100 }))),
        a
      )
      expect(runs.map((run) => run.runId)).toEqual([runId])
    }).pipe(Effect.scoped)
  )

  it.live("the same actions on the session's own run still work, by ID and by default", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "greet" })
      const runId = String(started.details.runId)
      const byId = yield* runTool({ _tag: "status", runId })
      expect(byId.isError).toBe(false)
      expect(byId.text).toContain(runId)
      const cancelled = yield* runTool({ _tag: "cancel", runId })
      expect(cancelled.isError).toBe(false)
      expect(cancelled.text).toMatch(/^Cancelled: /)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})

describe("deep JSON reaching the engine", () => {
  const deep = (levels: number): unknown => {
    let value: unknown = "leaf"
    for (let i = 0; i < levels; i++) value = { a: value }
    return value
  }
  const tooDeep = (field: string) =>
    `${field} nests arrays and objects more than 64 levels deep; at most 64 levels are accepted`

  it.live("a 5,000-deep start input or submit output is a typed refusal that writes nothing", () =>
    Effect.gen(function* () {
      const start = yield* runTool({ _tag: "start", workflow: "greet", input: deep(5_000) })
      expect(start.isError).toBe(true)
      expect(start.details.error).toBe("InvalidWorkflowInput")
      expect(start.text).toBe(
        `workflow start failed: input of workflow "greet" is invalid: ${tooDeep("input")}`
      )
      expect(yield* Effect.orDie(Effect.flatMap(RunStore, (store) => store.list({ limit: 10 })))).toEqual([])
      yield* runTool({ _tag: "start", workflow: "greet" })
      yield* afterSettle(false)
      yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
      const requestId = yield* lastRequestId
      const submit = yield* runTool({ _tag: "submit", requestId, output: deep(5_000) })
      expect(submit.details.error).toBe("SubmitRejected")
      expect(submit.text).toBe(
        `workflow submit failed: submission for request ${requestId} rejected (invalidOutput): ${tooDeep("output")}`
      )
      // The request stayed open: a flat answer is accepted.
      expect((yield* runTool({ _tag: "submit", requestId, output: deep(64) })).isError).toBe(false)
    }).pipe(Effect.provide(buildApp()), Effect.scoped)
  )
})
