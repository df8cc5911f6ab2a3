/**
 * Runs for the `serve` tests, written by the real stores under a TestClock set back from the real
 * time (the server, on the real clock, sees their ages): `run-deploy` (build ok; test taken over,
 * then failed with a GitHub token in its error, after one step reminder; a resolved `failed`
 * intent; a `presented` event), `run-deploy-2` restarting it, `run-ask` waiting at a checkpoint
 * whose question carries the token, and `run-long` with 25 settled steps for paging. No vitest
 * here: the e2e test and scratch scripts use it too.
 */
import { Effect, Layer, TestClock, TestContext } from "effect"
import { SUPERSEDED } from "../../src/domain/step-deadline.ts"
import { layerStores } from "../../src/app/layers.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { StepReminderStore } from "../../src/store/step-reminder-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { sampleFacts, sampleRun } from "../support/fixtures.ts"

/** A GitHub token shape the redactor catalogues (`ghp_` and 36 characters): never served. */
export const SECRET = `ghp_${"A1b2C3d4E5".repeat(3)}x9Y8z7`
const MINUTE = 60_000

const run = (runId: string, workflowName: string, sessionId: string) =>
  sampleRun(runId, { workflowName, workflowRef: workflowName, targetSessionId: sessionId, maxSteps: 40 })

/** The processes that ran run-deploy's visits: the first owner, and the one that took it over. */
export const RUNNER_A = { host: "build-host", pid: 4101 }
export const RUNNER_B = { host: "spare-host", pid: 5202 }

export const seedTimeline = Effect.gen(function* () {
  const runs = yield* RunStore
  const intents = yield* TurnIntentStore
  const launches = yield* LaunchStore
  const reminders = yield* StepReminderStore
  const real = Date.now()
  const at = (minutesAgo: number) => TestClock.setTime(real - minutesAgo * MINUTE)

  yield* at(60)
  yield* runs.reserve(run("run-deploy", "deploy", "s-deploy"))
  yield* runs.claim({ runId: "run-deploy", token: "t1", leaseMs: MINUTE, mode: "activate" })
  const first = { runId: "run-deploy", token: "t1" }
  yield* runs.startStep(first, { nodeId: "build", attemptId: "a-build", runner: RUNNER_A })
  yield* runs.recordLimit(first, { attemptId: "a-build", timeoutMs: 10 * MINUTE })
  yield* at(59)
  yield* runs.advance(first, {
    attemptId: "a-build",
    step: { _tag: "Outcome", outcome: "ok", output: { built: true }, timeoutMs: 10 * MINUTE },
    next: { _tag: "Continue", nodeId: "test" }
  })
  yield* runs.startStep(first, { nodeId: "test", attemptId: "a-test-1", runner: RUNNER_A })
  yield* runs.recordLimit(first, { attemptId: "a-test-1", timeoutMs: 30 * MINUTE })
  // The owner died; its lease ended; another process took the run over and continued the visit.
  yield* at(55)
  yield* runs.claim({ runId: "run-deploy", token: "t2", leaseMs: 60 * MINUTE, mode: "resume" })
  const second = { runId: "run-deploy", token: "t2" }
  yield* runs.settle(second, {
    attemptId: "a-test-1",
    step: { _tag: "Interrupted", reason: SUPERSEDED },
    next: { _tag: "Continue", nodeId: "test" }
  })
  yield* runs.startStep(second, { nodeId: "test", attemptId: "a-test-2", runner: RUNNER_B })
  yield* runs.recordLimit(second, { attemptId: "a-test-2", timeoutMs: 30 * MINUTE })
  yield* runs.openRequest(second, { requestId: "req-test-2", nodeId: "test", attemptId: "a-test-2" })
  yield* at(50)
  yield* reminders.take({
    runId: "run-deploy",
    nodeId: "test",
    attemptId: "a-test-2",
    requestId: "req-test-2",
    sessionId: "s-deploy",
    ordinal: 1
  })
  yield* at(45)
  yield* runs.settle(second, {
    attemptId: "a-test-2",
    step: {
      _tag: "Outcome",
      outcome: "failed",
      error: `GITHUB_TOKEN=${SECRET} was refused: push with ${SECRET} failed`,
      timeoutMs: 30 * MINUTE
    },
    closeRequest: "failed",
    next: {
      _tag: "End",
      state: "failed",
      error: { message: `tests failed (token ${SECRET})`, nodeId: "test", original: `GITHUB_TOKEN=${SECRET}` }
    }
  })
  const failed = yield* intents.ensure({
    sourceEventId: "ev-deploy-failed",
    runId: "run-deploy",
    workflowRef: "deploy",
    targetSessionId: "s-deploy",
    cause: "failed",
    nodeId: "test",
    attemptId: "a-test-2",
    facts: sampleFacts({ runId: "run-deploy", workflowName: "deploy", nodeId: "test", attemptId: "a-test-2" })
  })
  yield* at(44)
  yield* intents.makeEligible({ intentId: failed.intentId })
  yield* intents.claimEligibleForSession({
    targetSessionId: "s-deploy",
    limit: 1,
    token: "d1",
    leaseMs: 5 * MINUTE
  })
  yield* at(43)
  yield* intents.resolve({
    intentId: failed.intentId,
    token: "d1",
    resolution: "fallback",
    messageId: "msg-1"
  })
  yield* runs.recordEvent("run-deploy", { kind: "presented", message: `shown to the session with ${SECRET}` })

  // Restarted once: the launch row carries the lineage the chain shows.
  yield* at(40)
  yield* launches.reserve(
    {
      kind: "restart",
      lineage: {
        rootRunId: "run-deploy",
        parentRunId: "run-deploy",
        restartNumber: 1,
        parentFingerprint: "f".repeat(64),
        earlier: [
          {
            runId: "run-deploy",
            state: "failed",
            reasonKind: "failed",
            fingerprint: "f".repeat(64),
            summary: "tests failed"
          }
        ]
      },
      terminal: null,
      toolCallId: null
    },
    Effect.as(runs.reserve(run("run-deploy-2", "deploy", "s-deploy")), { runId: "run-deploy-2" })
  )

  // Waiting at a checkpoint whose question carries the token.
  yield* at(30)
  yield* runs.reserve(run("run-ask", "approval", "s-ask"))
  yield* runs.claim({ runId: "run-ask", token: "t-ask", leaseMs: MINUTE, mode: "activate" })
  const ask = { runId: "run-ask", token: "t-ask" }
  yield* runs.startStep(ask, { nodeId: "ask", attemptId: "a-ask" })
  yield* runs.wait(ask, {
    nodeId: "ask",
    attemptId: "a-ask",
    requestId: "req-ask",
    prompt: `Ship it with ${SECRET}?\nAnswer yes or no.`,
    deadlineAt: real + 60 * MINUTE,
    timeoutMs: 90 * MINUTE
  })

  // Many short steps, for paging.
  yield* at(20)
  yield* runs.reserve(run("run-long", "loop", "s-long"))
  yield* runs.claim({ runId: "run-long", token: "t-long", leaseMs: 60 * MINUTE, mode: "activate" })
  const long = { runId: "run-long", token: "t-long" }
  for (let i = 1; i <= 25; i++) {
    yield* runs.startStep(long, { nodeId: `n${i}`, attemptId: `a-long-${i}` })
    yield* TestClock.adjust(1_000)
    yield* runs.advance(long, {
      attemptId: `a-long-${i}`,
      step: { _tag: "Outcome", outcome: "ok", output: i, timeoutMs: null },
      next: { _tag: "Continue", nodeId: `n${i + 1}` }
    })
  }
}).pipe(Effect.provide(TestContext.TestContext))

/** `seedTimeline` on a new SQLite file. */
export const seedFile = (filename: string) =>
  Effect.scoped(Effect.provide(seedTimeline, Layer.fresh(layerStores({ filename }))))
