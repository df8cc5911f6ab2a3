/**
 * A user's cancel is quiet on every path (spec 000: direct cancellation produces no automatic
 * turn). An agent step times out (its `timedOut` intent pending, ineligible: the `timed_out`
 * route goes on to a slow compute node), then the user cancels with `/workflow cancel`: while
 * the route's runner still holds the run, and after a shutdown parked it (no runner; the cancel
 * is the store's, and reconciliation at the next session start decides from the stored rows).
 * Either way nothing reaches the model: no fallback, no turn started, and the timeout's intent is
 * retired (pending, never eligible). The agent's cancel at the same point still owes the run's
 * one terminal turn.
 *
 * The whole app over the fake session and a real SQLite file; the Effect clock is a TestClock
 * (the step limit passes when the test moves it), the test waits on real timers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope, TestClock } from "effect"
import { runCommand } from "../../src/app/command.ts"
import * as App from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart, onShutdown } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { NOTIFICATION_TYPE } from "../../src/domain/message-types.ts"
import type { PiSession } from "../../src/session/pi-session.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { untilOnRealTimers as until } from "../support/poll.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"
const LIMIT = 1_000

/** The step's limit passes; its `timed_out` route runs a compute node that never finishes. */
const slowRecovery = {
  name: "slowRecovery",
  startAt: "ask",
  nodes: {
    ask: { type: "agent", prompt: "Answer within a second.", timeoutMs: LIMIT },
    cleanup: { type: "compute", run: () => new Promise(() => {}) }
  },
  edges: [{ from: "ask", switch: { on: "$result.outcome", cases: { timed_out: "cleanup" } } }]
}

type Ctx = Context.Context<App.AppServices | PiSession | PiSessionFake>

const appIn = (filename: string, scope: Scope.Scope) =>
  Layer.build(
    App.layer({
      database: { filename },
      workflows: [slowRecovery]
    }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  ).pipe(Scope.extend(scope))

/** What starts or answers a model turn (the user's passive final notification is neither). */
const turnMessages = (context: Ctx) =>
  Effect.map(Context.get(context, PiSessionFake).sent, (sent) =>
    sent.filter((record) => record.message.customType !== NOTIFICATION_TYPE)
  )

/** Settles and session starts (reconciliation, fallback passes): whatever is owed goes out. */
const passes = (context: Ctx) =>
  Effect.gen(function* () {
    for (let i = 0; i < 3; i++) {
      const fake = Context.get(context, PiSessionFake)
      if ((yield* fake.phase) !== "idle") yield* fake.settle()
      yield* afterSettle(false)
      yield* onSessionStart
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
    }
  }).pipe(Effect.provide(context), Effect.orDie)

/**
 * In `context`: the model starts the run, its step prompt goes out, the step times out (the turn
 * is aborted, its `timedOut` intent stored) and the route reaches the slow compute node.
 */
const timedOutIntoCompute = (context: Ctx) =>
  Effect.gen(function* () {
    const fake = Context.get(context, PiSessionFake)
    const runs = Context.get(context, RunStore)
    const started = yield* runTool({ _tag: "start", workflow: "slowRecovery" })
    const runId = String(started.details.runId)
    yield* afterSettle(false)
    yield* until(
      Effect.map(fake.sent, (sent) => sent.filter((r) => r.message.customType === STEP)),
      (steps) => steps.length === 1,
      "the step prompt"
    )
    yield* TestClock.adjust(LIMIT + 1)
    yield* until(fake.aborts, (n) => n === 1, "the timeout's abort")
    yield* until(
      Effect.map(
        runs.get(runId),
        Option.map((r) => r.currentNodeId)
      ),
      (node) => Option.getOrNull(node) === "cleanup",
      "the route at the compute node"
    )
    // The aborted turn settles: a system abort, not the user's Escape.
    yield* fake.settle({ aborted: true })
    expect((yield* classifySettle(true)).userHold).toBe(false)
    yield* afterSettle(false)
    const [timeout] = yield* Context.get(context, TurnIntentStore).list({ runId, limit: 10 })
    expect([timeout?.cause, timeout?.eligibleAt, timeout?.resolvedAt]).toEqual(["timedOut", null, null])
    return { runId, turnsBefore: yield* fake.triggeredTurns }
  }).pipe(Effect.provide(context), Effect.orDie)

/** Nothing reached the model after the timeout: no fallback, no turn; the intent is retired. */
const expectQuiet = (context: Ctx, runId: string, turnsBefore: number) =>
  Effect.gen(function* () {
    const fake = Context.get(context, PiSessionFake)
    const run = Option.getOrThrow(yield* Context.get(context, RunStore).get(runId))
    expect([run.state, run.cancelRequested]).toEqual(["cancelled", "user"])
    expect((yield* turnMessages(context)).map((r) => r.message.customType)).toEqual([STEP])
    expect((yield* fake.branch).filter((m) => m.customType === FALLBACK)).toEqual([])
    expect(yield* fake.triggeredTurns).toBe(turnsBefore)
    const intents = yield* Context.get(context, TurnIntentStore).list({ runId, limit: 10 })
    expect(intents.map((i) => [i.cause, i.eligibleAt, i.resolvedAt])).toEqual([["timedOut", null, null]])
  }).pipe(Effect.orDie)

describe("the user's cancel after a step timeout whose route still runs", () => {
  it.scoped("while the route's runner holds the run: no fallback, no model turn", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const context = yield* appIn(filename, yield* Effect.scope)
      const { runId, turnsBefore } = yield* timedOutIntoCompute(context)
      const reply = yield* runCommand({ _tag: "cancel", runId }).pipe(Effect.provide(context))
      expect(reply.text).toMatch(/Cancelled/)
      yield* passes(context)
      yield* expectQuiet(context, runId, turnsBefore)
    })
  )

  it.scoped("after a shutdown parked it (the store's cancel, then reconciliation): still quiet", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const first = yield* Scope.make()
      const before = yield* appIn(filename, first)
      const { runId } = yield* timedOutIntoCompute(before)
      yield* Effect.orDie(onShutdown.pipe(Effect.provide(before)))
      yield* Scope.close(first, Exit.void)
      // A new Pi process on the session: the user cancels the parked run, then the session's
      // debts are recomputed from the stored rows.
      const context = yield* appIn(filename, yield* Effect.scope)
      const reply = yield* runCommand({ _tag: "cancel", runId }).pipe(Effect.provide(context))
      expect(reply.text).toMatch(/Cancelled/)
      yield* passes(context)
      const fake = Context.get(context, PiSessionFake)
      const run = Option.getOrThrow(yield* Effect.orDie(Context.get(context, RunStore).get(runId)))
      expect([run.state, run.cancelRequested]).toEqual(["cancelled", "user"])
      expect(yield* turnMessages(context)).toEqual([])
      expect(yield* fake.triggeredTurns).toBe(0)
      const intents = yield* Effect.orDie(Context.get(context, TurnIntentStore).list({ runId, limit: 10 }))
      expect(intents.map((i) => [i.cause, i.eligibleAt, i.resolvedAt])).toEqual([["timedOut", null, null]])
    })
  )

  it.scoped("the agent's cancel at the same point owes the run's one terminal turn", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const context = yield* appIn(filename, yield* Effect.scope)
      const { runId } = yield* timedOutIntoCompute(context)
      const fake = Context.get(context, PiSessionFake)
      yield* fake.startTurn
      const reply = yield* runTool({ _tag: "cancel", runId }).pipe(Effect.provide(context))
      expect(reply.isError).toBe(false)
      yield* passes(context)
      const fallbacks = (yield* fake.branch).filter((m) => m.customType === FALLBACK)
      expect(fallbacks).toHaveLength(1)
      const intents = yield* Effect.orDie(Context.get(context, TurnIntentStore).list({ runId, limit: 10 }))
      expect(intents.map((i) => [i.cause, i.resolution])).toEqual([["timedOut", "fallback"]])
    })
  )
})
