/**
 * The runner's retry of a settle that failed (`settleWhileOwned`, `src/engine/store-retry.ts`):
 * it follows `TimingPolicy.settleRetry`, and it ends when the run stops being this process's.
 * The whole application graph over a real SQLite file; only the run store's `settle` fails
 * (read-only), so the abort, the intent and the renewals work as usual.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, type Duration, Effect, Fiber, Layer, Logger, LogLevel, Option, Schedule } from "effect"
import { runTool } from "../../src/app/tool.ts"
import type { TimingPolicyService } from "../../src/domain/timing-policy.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { RunStoreFaults } from "../../src/testing/store-faults.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { eventually, STEP } from "../app/support.ts"
import { layerAppUnderFaults } from "../faults/app-under-faults.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { withTimings } from "../support/timing.ts"

const patient = {
  name: "patient",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: 600_000 } },
  edges: []
}

const build = (
  filename: string,
  policy: Partial<TimingPolicyService> = {},
  engine = { leaseMs: 60_000, renewEveryMs: 20_000 }
) =>
  Layer.build(
    layerAppUnderFaults({
      location: filename,
      busyTimeoutMs: 100,
      workflows: [patient],
      engine
    }).pipe(
      Layer.provideMerge(layerFake({ sessionId: "s1" })),
      Layer.provide(withTimings({ ...policy, syncInterval: null }))
    )
  )
type App = Effect.Effect.Success<ReturnType<typeof build>>

/** A run at its step prompt whose end will fail read-only; the agent cancels it (after `delay`). */
const cancelUnderFault = (app: App, times?: number, delay: Duration.DurationInput = 0) =>
  Effect.gen(function* () {
    const engine = Context.get(app, Engine)
    const fake = Context.get(app, PiSessionFake)
    const run = yield* engine.start({ workflow: "patient", input: {}, sessionId: "s1", origin: "tool" })
    yield* engine.activate("s1")
    yield* eventually(fake.branch, (b) => b.some((m) => m.customType === STEP))
    yield* Effect.sleep(delay)
    yield* Context.get(app, RunStoreFaults).inject(
      "settle",
      { _tag: "ReadOnly" },
      times === undefined ? {} : { times }
    )
    const reply = yield* Effect.fork(runTool({ _tag: "cancel", runId: run.runId }).pipe(Effect.provide(app)))
    yield* eventually(fake.aborts, (n) => n === 1)
    return { runId: run.runId, reply }
  })

const stateOf = (app: App, runId: string) =>
  Effect.map(
    Context.get(app, RunStore).get(runId),
    Option.match({ onNone: () => null, onSome: (r) => r.state })
  )

describe("the runner's settle retry", () => {
  it.live("a run's end that failed read-only once is retried: the run ends cancelled as decided", () =>
    Effect.gen(function* () {
      const app = yield* build(yield* tempDbPath)
      const { runId, reply } = yield* cancelUnderFault(app, 1)
      expect((yield* Fiber.join(reply)).isError).toBe(false)
      expect(yield* stateOf(app, runId)).toBe("cancelled")
    }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))
  )

  it.live("it follows TimingPolicy.settleRetry: two retries, then the run is left to a takeover", () =>
    Effect.gen(function* () {
      const app = yield* build(yield* tempDbPath, {
        settleRetry: Schedule.intersect(Schedule.spaced("10 millis"), Schedule.recurs(2))
      })
      const { runId, reply } = yield* cancelUnderFault(app)
      // The reply comes once the runner has stopped.
      yield* Fiber.await(reply)
      expect((yield* Context.get(app, RunStoreFaults).calls).settle).toBe(3)
      expect(yield* stateOf(app, runId)).toBe("running")
    }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))
  )

  it.live(
    "a runner past its lease stops retrying: its end cannot land after another process may own the run",
    () =>
      Effect.gen(function* () {
        // No renewal after the first: the lease taken at activation is the runner's whole claim.
        const app = yield* build(yield* tempDbPath, {}, { leaseMs: 2_000, renewEveryMs: 600_000 })
        // The end starts failing late in the lease; the store heals after the lease ran out but
        // within one lease of the first failure, when a retry bounded only by that still runs.
        const { reply } = yield* cancelUnderFault(app, undefined, "1500 millis")
        yield* Effect.sleep("1500 millis")
        // The runner has given up (the cancel's reply comes once it stopped) before the heal.
        expect(Option.isSome(yield* Fiber.poll(reply))).toBe(true)
        yield* Context.get(app, RunStoreFaults).clear()
      }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))
  )

  it.live("shutting the engine down ends a retry that keeps failing, instead of waiting out the lease", () =>
    Effect.gen(function* () {
      const app = yield* build(yield* tempDbPath)
      const { runId } = yield* cancelUnderFault(app)
      yield* Effect.sleep("300 millis") // a few failed tries
      // Without the stop, shutdown waits for the runner, which retries for one lease (60 s).
      const done = yield* Context.get(app, Engine).shutdown.pipe(Effect.timeout("5 seconds"), Effect.either)
      expect(done._tag).toBe("Right")
      yield* Context.get(app, RunStoreFaults).clear()
      // The claim stays: the next owner takes the run over and reruns the step.
      expect(yield* stateOf(app, runId)).toBe("running")
    }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.None))
  )
})
