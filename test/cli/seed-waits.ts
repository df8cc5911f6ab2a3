/**
 * A SQLite file with runs at waiting checkpoints for the CLI tests, written by the real stores
 * under a TestClock set back from the real time (so the CLI, on the real clock, sees their
 * ages), and one run the real engine made wait (a `wait` node) on the live clock.
 */
import { Effect, Option, TestClock, TestContext } from "effect"
import { USER_HOLD_REASON } from "../../src/domain/run-condition.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { makeHarness } from "../engine/support/harness.ts"
import { newRun } from "./cli-support.ts"

/** A GitHub token shape the redactor catalogues: never printed. */
export const SECRET = `ghp_${"A1b2C3d4E5".repeat(3)}x9Y8z7`
export const HOUR = 3_600_000

/**
 * run-ask waits since 2 h ago (deadline in 6 h, a secret in its two-line prompt); run-fresh waits
 * since now with no deadline; run-answered waited, was answered by the user and completed;
 * run-paused and run-held are stored `waiting` without a checkpoint (a pause, the user's Escape).
 */
export const seedWaits = Effect.gen(function* () {
  const runs = yield* RunStore
  const real = Date.now()
  const waitAt = (runId: string, prompt: string, deadlineAt: number | null) =>
    Effect.gen(function* () {
      yield* runs.reserve(newRun(runId, `s-${runId}`))
      yield* runs.claim({ runId, token: `t-${runId}`, leaseMs: 60_000, mode: "activate" })
      const fence = { runId, token: `t-${runId}` }
      yield* runs.startStep(fence, { nodeId: "ask", attemptId: `att-${runId}` })
      return yield* runs.wait(fence, {
        nodeId: "ask",
        attemptId: `att-${runId}`,
        requestId: `req-${runId}`,
        prompt,
        deadlineAt,
        timeoutMs: deadlineAt === null ? null : 8 * HOUR
      })
    })
  yield* TestClock.setTime(real - 3 * HOUR)
  yield* waitAt("run-answered", "Which branch?", null)
  yield* TestClock.setTime(real - 2.5 * HOUR)
  yield* runs.answerWait({
    requestId: "req-run-answered",
    answer: "main",
    by: "user",
    receipt: {
      schema: "pi-workflows.submit-receipt.v1",
      runId: "run-answered",
      requestId: "req-run-answered",
      nodeId: "ask",
      attemptId: "att-run-answered",
      acceptedAt: new Date(real - 2.5 * HOUR).toISOString()
    }
  })
  yield* runs.claim({ runId: "run-answered", token: "t-again", leaseMs: 60_000, mode: "resume" })
  yield* runs.settle(
    { runId: "run-answered", token: "t-again" },
    { next: { _tag: "End", state: "completed", result: { branch: "main" } } }
  )
  yield* TestClock.setTime(real - 2 * HOUR)
  yield* waitAt("run-ask", `Deploy with ${SECRET} to production?\nSecond line: the details`, real + 6 * HOUR)
  // Paused: its owner's lease ended, so the pause holds it at once (stored waiting, no checkpoint).
  yield* runs.reserve(newRun("run-paused", "s-paused"))
  yield* runs.claim({ runId: "run-paused", token: "t-paused", leaseMs: 60_000, mode: "activate" })
  yield* TestClock.setTime(real - HOUR)
  yield* runs.requestPause("run-paused")
  // Held after the user's Escape (parked with the hold reason, then held).
  yield* runs.reserve(newRun("run-held", "s-held"))
  yield* runs.claim({ runId: "run-held", token: "t-held", leaseMs: 60_000, mode: "activate" })
  const held = { runId: "run-held", token: "t-held" }
  yield* runs.startStep(held, { nodeId: "hello", attemptId: "att-held" })
  yield* runs.settle(held, {
    attemptId: "att-held",
    step: { _tag: "Interrupted", reason: `parked: ${USER_HOLD_REASON}` },
    closeRequest: "parked",
    next: { _tag: "Park", reason: USER_HOLD_REASON }
  })
  yield* runs.requestPause("run-held")
  yield* TestClock.setTime(real)
  yield* waitAt("run-fresh", "Which colour?", null)
}).pipe(Effect.provide(TestContext.TestContext))

/** ask (a wait node whose prompt carries a secret) → end: the real engine's waiting run. */
const approval = {
  name: "approval",
  startAt: "ask",
  nodes: {
    ask: { type: "wait", prompt: `Ship it with key ${SECRET}?\nAnswer yes or no.`, timeoutMs: 8 * HOUR },
    done: { type: "compute", run: () => ({ ok: true }) }
  },
  edges: [{ from: "ask", to: "done" }]
}

/** Launch `approval` with the real engine on `filename` until it waits; its run ID. */
export const engineWait = (filename: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const h = yield* makeHarness({ definitions: [approval], filename })
      const runId = yield* h.launch("approval")
      yield* h.coordinator.take
      const run = Option.getOrThrow(yield* h.store.get(runId))
      if (run.waitRequestId === null) return yield* Effect.dieMessage(`${runId} does not wait`)
      return { runId, requestId: run.waitRequestId }
    })
  )
