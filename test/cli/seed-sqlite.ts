/** The SQLite databases the CLI tests read, written by the real stores. */
import { Context, Effect, Layer, TestClock, TestContext } from "effect"
import { USER_HOLD_REASON } from "../../src/domain/run-condition.ts"
import { layerStores } from "../../src/app/layers.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"
import { StepReminderStore } from "../../src/store/step-reminder-store.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { newRun, resolvedIntent } from "./cli-support.ts"

export const withStores = <A, E>(
  filename: string,
  program: Effect.Effect<A, E, TurnIntentStore | RunStore | StepReminderStore>
) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(layerStores({ filename })), (context) =>
      Effect.provide(program, Context.pick(TurnIntentStore, RunStore, StepReminderStore)(context))
    )
  )

/** A failed run restarted once: the launch row carries the lineage the CLI shows. */
export const seedChain = (filename: string) =>
  Effect.scoped(
    Effect.flatMap(Layer.build(layerStores({ filename })), (context) =>
      Effect.gen(function* () {
        const runs = Context.get(context, RunStore)
        const launches = Context.get(context, LaunchStore)
        yield* runs.reserve(newRun("run-first", "session-c"))
        yield* runs.claim({ runId: "run-first", token: "t1", leaseMs: 60_000, mode: "activate" })
        yield* runs.settle(
          { runId: "run-first", token: "t1" },
          {
            next: {
              _tag: "End",
              state: "failed",
              error: { message: "boom", nodeId: "hello", original: null }
            }
          }
        )
        const fingerprint = "f".repeat(64)
        yield* launches.reserve(
          {
            kind: "restart",
            lineage: {
              rootRunId: "run-first",
              parentRunId: "run-first",
              restartNumber: 1,
              parentFingerprint: fingerprint,
              earlier: [
                { runId: "run-first", state: "failed", reasonKind: "failed", fingerprint, summary: "boom" }
              ]
            },
            terminal: null,
            toolCallId: null
          },
          Effect.as(runs.reserve(newRun("run-second", "session-c")), { runId: "run-second" })
        )
      })
    )
  )

/** A completed run with two steps and a resolved intent; a running run with an eligible intent. */
export const seedHealthy = Effect.gen(function* () {
  const runs = yield* RunStore
  const intents = yield* TurnIntentStore
  yield* runs.reserve(newRun("run-done", "session-a"))
  yield* runs.claim({ runId: "run-done", token: "t1", leaseMs: 60_000, mode: "activate" })
  const fence = { runId: "run-done", token: "t1" }
  yield* runs.startStep(fence, { nodeId: "hello", attemptId: "att-1" })
  yield* runs.settle(fence, {
    attemptId: "att-1",
    step: { _tag: "Outcome", outcome: "timed_out", error: "step timed out after 1s", timeoutMs: 1_000 },
    next: { _tag: "Continue", nodeId: "bye" }
  })
  yield* runs.startStep(fence, { nodeId: "bye", attemptId: "att-2" })
  yield* runs.settle(fence, {
    attemptId: "att-2",
    step: { _tag: "Outcome", outcome: "ok", output: { greeting: "hi" }, timeoutMs: null },
    next: { _tag: "End", state: "completed", result: { greeting: "hi" } }
  })
  const done = yield* resolvedIntent(
    intents,
    sampleIntent({ runId: "run-done", targetSessionId: "session-a", sourceEventId: "ev-1", nodeId: "hello" })
  )
  yield* runs.reserve(newRun("run-live", "session-b"))
  yield* runs.claim({ runId: "run-live", token: "t2", leaseMs: 600_000, mode: "activate" })
  yield* intents.ensure(
    sampleIntent({
      runId: "run-live",
      targetSessionId: "session-b",
      sourceEventId: "ev-2",
      eligible: true,
      facts: sampleFacts({ runId: "run-live" })
    })
  )
  return done
})

/**
 * Under a TestClock at 1970 every record is decades old: a pending intent that never became
 * eligible, an intent whose delivery claim expired, a running run whose lease ended.
 */
export const seedStale = Effect.gen(function* () {
  const runs = yield* RunStore
  const intents = yield* TurnIntentStore
  yield* intents.ensure(sampleIntent({ runId: "run-lost", sourceEventId: "ev-lost", targetSessionId: "s-1" }))
  yield* intents.ensure(
    sampleIntent({ runId: "run-claimed", sourceEventId: "ev-c", targetSessionId: "s-2", eligible: true })
  )
  yield* intents.claimEligibleForSession({ targetSessionId: "s-2", limit: 1, token: "gone", leaseMs: 1_000 })
  // The user cancelled this run directly: its pending intent is retired, not stranded.
  yield* runs.reserve(newRun("run-user-cancelled", "s-4"))
  yield* intents.ensure(
    sampleIntent({ runId: "run-user-cancelled", sourceEventId: "ev-uc", targetSessionId: "s-4" })
  )
  yield* runs.cancel("run-user-cancelled", "user")
  yield* runs.reserve(newRun("run-abandoned", "s-3"))
  yield* runs.claim({ runId: "run-abandoned", token: "dead-runner", leaseMs: 1_000, mode: "activate" })
  yield* TestClock.adjust(5_000)
}).pipe(Effect.provide(TestContext.TestContext))

/** Step limits of the runs `seedStates` writes. */
export const EIGHT_HOURS = 8 * 3_600_000

/**
 * Runs whose stored state is not the whole story, written under a TestClock set back from the
 * real time (so the CLI, on the real clock, sees their ages): parked at shutdown 2 h ago, a run
 * whose owner's lease ended 1 h ago, a run the user holds after Escape, and a live run whose
 * agent step (limit 8 h) started now.
 */
export const seedStates = Effect.gen(function* () {
  const runs = yield* RunStore
  const real = Date.now()
  const visit = (runId: string, sessionId: string, token: string, leaseMs: number) =>
    Effect.gen(function* () {
      yield* runs.reserve(newRun(runId, sessionId))
      yield* runs.claim({ runId, token, leaseMs, mode: "activate" })
      const fence = { runId, token }
      yield* runs.startStep(fence, { nodeId: "hello", attemptId: `att-${runId}` })
      yield* runs.recordLimit(fence, { attemptId: `att-${runId}`, timeoutMs: EIGHT_HOURS })
      return fence
    })
  const park = (fence: { runId: string; token: string }, reason: string) =>
    runs.settle(fence, {
      attemptId: `att-${fence.runId}`,
      step: { _tag: "Interrupted", reason: `parked: ${reason}` },
      closeRequest: "parked",
      next: { _tag: "Park", reason }
    })
  yield* TestClock.setTime(real - 2 * 3_600_000)
  yield* park(yield* visit("run-parked", "s-parked", "t-parked", 60_000), "shutdown")
  yield* TestClock.setTime(real - 3_600_000 - 60_000)
  yield* visit("run-orphan", "s-orphan", "t-dead", 60_000)
  yield* TestClock.setTime(real - 30 * 60_000)
  yield* park(yield* visit("run-held", "s-held", "t-held", 60_000), USER_HOLD_REASON)
  yield* runs.requestPause("run-held")
  yield* TestClock.setTime(real)
  yield* visit("run-flight", "s-flight", "t-live", 3_600_000)
  // A live run whose model ended its turn twice without submit: two reminders sent.
  const waiting = yield* visit("run-waiting", "s-waiting", "t-waiting", 3_600_000)
  const ids = { runId: "run-waiting", nodeId: "hello", attemptId: "att-run-waiting", requestId: "req-w" }
  yield* runs.openRequest(waiting, ids)
  const reminders = yield* StepReminderStore
  for (const ordinal of [1, 2] as const) yield* reminders.take({ ...ids, sessionId: "s-waiting", ordinal })
}).pipe(Effect.provide(TestContext.TestContext))
