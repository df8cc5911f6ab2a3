/**
 * Passive notifications through the whole app (engine, tool, command, hooks) over the fake Pi
 * session and a real SQLite file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { runCommand } from "../../src/app/command.ts"
import * as App from "../../src/app/layers.ts"
import { afterSettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import { NotificationStore } from "../../src/store/notification-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { eventually, lastRequestId, PRESENTATION, sentOfType, STEP } from "../app/support.ts"
import { appDatabase, freshLocation } from "../support/backend.ts"
import { NoSyncPass } from "../support/timing.ts"

const reporter = {
  name: "reporter",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "Say hello." },
    work: {
      type: "compute",
      run: async (ctx: { progress: (text: string) => Promise<void> }) => {
        await ctx.progress("1/3 fetched")
        await ctx.progress("2/3 parsed")
        await ctx.progress("3/3 written")
        return { done: true }
      }
    }
  },
  edges: [{ from: "ask", to: "work" }]
}

const careless = {
  name: "careless",
  startAt: "work",
  nodes: {
    work: { type: "compute", run: (ctx: { progress: (text: string) => unknown }) => ctx.progress("") }
  },
  edges: []
}

/** The app with a long rate window, so which reports coalesce does not depend on the machine's speed. */
const app = Layer.unwrapScoped(
  Effect.map(freshLocation, (filename) =>
    App.layer({
      database: appDatabase(filename),
      workflows: [reporter, careless],
      notifications: { minIntervalMs: 60_000 }
    }).pipe(Layer.provide(NoSyncPass), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  )
)

const notices = Effect.map(sentOfType(NOTIFICATION_TYPE), (sent) => sent.map((r) => r.message.content))
const stored = Effect.flatMap(NotificationStore, (store) => store.list({ limit: 100 }))

const startReporter = Effect.gen(function* () {
  const started = yield* runTool({ _tag: "start", workflow: "reporter" })
  yield* afterSettle(false)
  yield* eventually(sentOfType(STEP), (steps) => steps.length === 1)
  return String(started.details.runId)
})

describe("passive notifications in the app", () => {
  it.live(
    "the progress action: stored and shown, no turn; bad input is a tool error that stores nothing",
    () =>
      Effect.gen(function* () {
        const fake = yield* PiSessionFake
        const runId = yield* startReporter
        const requestId = yield* lastRequestId
        const turnsBefore = yield* fake.triggeredTurns
        const ok = yield* runTool({ _tag: "progress", requestId, text: "reading the issue" })
        expect(ok.isError).toBe(false)
        expect(ok.details).toEqual({ runId, status: "stored" })
        expect(yield* notices).toEqual([`Workflow reporter (run ${runId}): reading the issue`])
        expect(yield* fake.statusLines).toEqual(
          new Map([[`pi-workflows:${runId}`, `… reporter (run ${runId}): reading the issue`]])
        )
        const bad = (text: string, request = requestId) =>
          Effect.map(runTool({ _tag: "progress", requestId: request, text }), (reply) => {
            expect(reply.isError).toBe(true)
            return reply.text
          })
        expect(yield* bad("x".repeat(2049))).toMatch(
          /^workflow progress failed: progress text is 2049 bytes; the limit is 2048 bytes/
        )
        expect(yield* bad("")).toMatch(/must not be empty/)
        expect(yield* bad("hi", "req-unknown")).toMatch(/request req-unknown does not exist/)
        // Wrong run: the request belongs to another session's run.
        yield* fake.setSessionId("s2")
        expect(yield* bad("hi")).toMatch(/^workflow progress failed: run \S+ belongs to another Pi session/)
        yield* fake.setSessionId("s1")
        // After the run ended.
        yield* runTool({ _tag: "submit", requestId, output: { hi: 1 } })
        // The presentation answers the run's terminal turn intent once the turn has settled.
        yield* fake.settle()
        yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
        expect(yield* bad("too late")).toMatch(/has ended \(completed\); progress is closed/)
        const kinds = (yield* stored).map((n) => n.kind)
        // One accepted report, the compute node's reports (the first, then the newest held one,
        // stored at the run's end), and one final.
        expect(kinds).toEqual(["progress", "progress", "final"])
        expect(yield* notices).toEqual([
          `Workflow reporter (run ${runId}): reading the issue`,
          `Workflow reporter (run ${runId}): 3/3 written`,
          `Workflow reporter (run ${runId}) completed after 2 steps`
        ])
        // Notifications never ask for a turn nor start one.
        const sends = yield* sentOfType(NOTIFICATION_TYPE)
        expect(sends.map((r) => [r.options.triggerTurn, r.startedTurn])).toEqual([
          [false, false],
          [false, false],
          [false, false]
        ])
        // Progress is the run's one footer line (not a message in the conversation); the final
        // report is shown in the conversation and clears the line.
        expect(sends.map((r) => r.message.display)).toEqual([false, false, true])
        expect(yield* fake.statusLines).toEqual(new Map())
        // The only turn since is the presentation's (sent after the settle); the only intent is
        // the run's terminal turn intent, which the presentation resolved.
        expect(yield* fake.triggeredTurns).toBe(turnsBefore + 1)
        const owned = yield* Effect.flatMap(TurnIntentStore, (s) => s.list({ limit: 10 }))
        expect(owned.map((i) => [i.cause, i.resolution])).toEqual([["completed", "presentation"]])
      }).pipe(Effect.provide(app), Effect.scoped)
  )

  it.live(
    "ctx.progress in a compute node: reports coalesce, the final follows, /workflow status shows the latest",
    () =>
      Effect.gen(function* () {
        const runId = yield* startReporter
        yield* runTool({ _tag: "submit", requestId: yield* lastRequestId, output: "hello" })
        yield* (yield* PiSessionFake).settle()
        yield* eventually(sentOfType(PRESENTATION), (p) => p.length === 1)
        // "1/3" is stored at once; "2/3" is held and replaced by "3/3", stored before the final.
        expect(yield* notices).toEqual([
          `Workflow reporter (run ${runId}): 1/3 fetched`,
          `Workflow reporter (run ${runId}): 3/3 written`,
          `Workflow reporter (run ${runId}) completed after 2 steps`
        ])
        const list = yield* runCommand({ _tag: "status", runId: undefined })
        expect(list.text).toContain(`run ${runId}`)
        expect(list.text).toContain("\n  progress: 3/3 written")
        const one = yield* runCommand({ _tag: "status", runId })
        expect(one.text.split("\n")[0]).toContain(`Run ${runId}`)
        expect(one.text).toContain("\n  progress: 3/3 written")
      }).pipe(Effect.provide(app), Effect.scoped)
  )

  it.live("bad text from ctx.progress fails the node with a clear error; the final says so", () =>
    Effect.gen(function* () {
      const started = yield* runTool({ _tag: "start", workflow: "careless" })
      yield* afterSettle(false)
      yield* eventually(notices, (n) => n.length === 1)
      expect((yield* notices)[0]).toBe(
        `Workflow careless (run ${String(started.details.runId)}) failed after 1 step: node "work" failed: ctx.progress: progress text must not be empty`
      )
    }).pipe(Effect.provide(app), Effect.scoped)
  )

  it.live("session start shows what this session missed, and only that", () =>
    Effect.gen(function* () {
      const store = yield* NotificationStore
      const payload = (text: string) => ({
        schema: "pi-workflows.notification.v1" as const,
        kind: "progress" as const,
        workflowName: "reporter",
        text,
        nodeId: null,
        attemptId: null
      })
      yield* store.insert({
        notificationId: "a",
        runId: "r1",
        targetSessionId: "s1",
        payload: payload("mine")
      })
      yield* store.insert({
        notificationId: "b",
        runId: "r2",
        targetSessionId: "s9",
        payload: payload("theirs")
      })
      yield* onSessionStart
      expect(yield* notices).toEqual(["Workflow reporter (run r1): mine"])
      expect((yield* store.list({ state: "pending", limit: 10 })).map((n) => n.notificationId)).toEqual(["b"])
    }).pipe(Effect.provide(app), Effect.scoped)
  )
})
