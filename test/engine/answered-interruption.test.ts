/**
 * One interruption, one successor, when the natural successor goes out while the intent store
 * cannot be read (engine-simulation seed 666): a step times out, its recovery prompt is sent
 * while listing and claiming intents fail, then the agent cancels the run. The recovery prompt
 * answered the timeout; the cancel's fallback is the run's only fallback.
 *
 * Whole application graph over a real SQLite file, faults on the turn-intent store only.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { RunStoreFaults, StoreFaults } from "../../src/testing/store-faults.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { layerAppUnderFaults } from "../faults/app-under-faults.ts"
import { until } from "../support/poll.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { NoSyncPass } from "../support/timing.ts"

const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"

const routed = {
  name: "routed",
  startAt: "review",
  nodes: {
    review: { type: "agent", prompt: "Review.", timeoutMs: 300 },
    recover: { type: "agent", prompt: "Review timed out; decide now.", timeoutMs: null }
  },
  edges: [{ from: "review", switch: { on: "$result.outcome", cases: { timed_out: "recover" } } }]
}

const buildApp = (filename: string) =>
  Layer.build(
    layerAppUnderFaults({
      location: filename,
      busyTimeoutMs: 100,
      workflows: [routed],
      engine: { leaseMs: 60_000, renewEveryMs: 20_000 }
    }).pipe(Layer.provide(NoSyncPass), Layer.provideMerge(layerFake({ sessionId: "s1" })))
  )
type App = Effect.Effect.Success<ReturnType<typeof buildApp>>
const ctx = <I, S>(app: App, tag: Context.Tag<I, S>) => Context.get(app as Context.Context<I>, tag)

/** Pi's agent_settled, both hook halves; with `start`, then session start (reconciliation, sync). */
const settle = (app: App, aborted: boolean, start: boolean) =>
  Effect.gen(function* () {
    const fake = ctx(app, PiSessionFake)
    if ((yield* fake.phase) !== "idle") yield* fake.settle({ aborted })
    const { userHold } = yield* classifySettle(aborted)
    yield* afterSettle(userHold)
    if (start) yield* onSessionStart
  }).pipe(Effect.provide(app))

const messagesOf = (app: App, customType: string, runId: string) =>
  Effect.map(ctx(app, PiSessionFake).branch, (branch) =>
    branch.filter(
      (m) =>
        m.customType === customType &&
        typeof m.details === "object" &&
        m.details !== null &&
        "runId" in m.details &&
        m.details.runId === runId
    )
  )

/**
 * A `routed` run whose review step timed out: its turn aborted and the timeout's intent stored,
 * pending, before the recovery prompt goes out.
 */
const timedOutRun = Effect.gen(function* () {
  const app = yield* buildApp(yield* tempDbPath)
  const engine = ctx(app, Engine)
  const { runId } = yield* Effect.orDie(
    engine.start({ workflow: "routed", input: {}, sessionId: "s1", origin: "tool" })
  )
  yield* Effect.orDie(engine.activate("s1"))
  yield* until(messagesOf(app, STEP, runId), (m) => m.length === 1, "the review prompt")
  yield* until(ctx(app, PiSessionFake).aborts, (n) => n === 1, "the timeout's abort")
  const [timedOut] = yield* until(
    ctx(app, TurnIntentStore).list({ runId, limit: 10 }),
    (l) => l.length === 1,
    "intent"
  )
  return { app, runId, timedOut }
})

/**
 * The agent cancels the run while its turn works on the recovery prompt; settles and session
 * starts (reconciliation included) until nothing of the run is pending. The recovery prompt
 * answered the timeout, the cancel's fallback is the run's only fallback.
 */
const cancelToOneFallback = (app: App, runId: string) =>
  Effect.gen(function* () {
    const reply = yield* runTool({ _tag: "cancel", runId }).pipe(Effect.provide(app))
    expect(reply.isError).toBe(false)
    yield* until(
      Effect.map(ctx(app, RunStore).get(runId), (r) => (r._tag === "Some" ? r.value.state : null)),
      (s) => s === "cancelled",
      "the run cancelled"
    )
    const rows = yield* until(
      Effect.zipRight(settle(app, true, true), ctx(app, TurnIntentStore).list({ runId, limit: 10 })),
      (l) => l.length === 2 && l.every((i) => i.resolvedAt !== null),
      "every intent resolved"
    )
    const byCause = Object.fromEntries(rows.map((i) => [i.cause, i.resolution]))
    expect(byCause).toEqual({ timedOut: "workflowPrompt", agentCancelled: "fallback" })
    yield* settle(app, false, true)
    expect(yield* messagesOf(app, FALLBACK, runId)).toHaveLength(1)
  })

describe("a natural successor sent while the intent store cannot be read", () => {
  it.live(
    "answers its interruption: the agent's later cancel gets the run's only fallback (seed 666)",
    () =>
      Effect.gen(function* () {
        const { app, runId, timedOut } = yield* timedOutRun
        expect(timedOut?.cause).toBe("timedOut")
        // The recovery prompt goes out while the intent store cannot be listed or claimed.
        const faults = ctx(app, StoreFaults)
        yield* faults.inject("list", { _tag: "Busy" })
        yield* faults.inject("claimForRun", { _tag: "Busy" })
        yield* settle(app, true, false)
        const prompts = yield* until(
          messagesOf(app, STEP, runId),
          (m) => m.length === 2,
          "the recovery prompt"
        )
        yield* faults.clear()
        yield* cancelToOneFallback(app, runId)
        // The prompt carries the timeout's intent: the branch records what it answered.
        expect(prompts[1]?.details).toMatchObject({ turnIntentId: timedOut?.intentId })
      }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None)),
    30_000
  )

  it.live(
    "a prompt whose abort's clear fails keeps its runner: the agent's later cancel gets the run's fallback (seed 9779)",
    () =>
      Effect.gen(function* () {
        // The runner used to stop on the failed clear: the run stayed claimed and running, with
        // the answered abort on its row, so the next owner's end reused the resolved intent.
        const { app, runId } = yield* timedOutRun
        const runFaults = ctx(app, RunStoreFaults)
        yield* runFaults.inject("clearInterruption", { _tag: "ReadOnly" })
        yield* settle(app, true, false)
        yield* until(messagesOf(app, STEP, runId), (m) => m.length === 2, "the recovery prompt")
        yield* until(runFaults.fired, (fired) => (fired.ReadOnly ?? 0) > 0, "the clear refused")
        yield* runFaults.clear()
        yield* cancelToOneFallback(app, runId)
        // The row's abort is the agent's cancel, not the timeout the prompt answered.
        const ended = yield* Effect.orDie(ctx(app, RunStore).get(runId))
        expect(ended._tag === "Some" ? ended.value.abort?.cause : null).toBe("agentCancelled")
      }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None)),
    30_000
  )
})
