/**
 * Claim loss after the new owner's newer prompt (engine-simulation seed 9407): runner B took the
 * run over and opened a newer attempt (its prompt went to the session) before runner A learned
 * that its claim was lost. B's prompt is the session's successor turn, so A records no handoff
 * and stores no claim-loss intent (otherwise the run's later end under B, the agent's cancel,
 * owes a second terminal message beside A's claim-loss fallback). A still stops its own turn:
 * claim loss always stops the old runner's work, so that turn no longer works on a step A does
 * not own (before, A aborted nothing and the old turn went on).
 *
 * Real SQLite file shared by A (the whole application graph) and B (a second store connection).
 * The Effect clocks are TestClock; the test waits in real time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, Option, TestClock } from "effect"
import { layerStores } from "../../src/app/layers.ts"
import { untilOnRealTimers as until } from "../support/poll.ts"
import { runnerAPrompted, runnerB, STEP } from "../support/claim-loss.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { tempDbPath } from "../support/temp-db.ts"

/** Messages logged by the application, to learn when A's runner has stopped. */
const logged: Array<string> = []
const capture = Logger.add(Logger.make(({ message }) => logged.push(String(message))))

describe("claim loss after the new owner opened a newer attempt", () => {
  it.scoped("the old runner records no handoff and stores no claim-loss intent, but stops its turn", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const b = yield* runnerB(filename)
      const {
        app,
        fake,
        intents,
        runId,
        attemptId: attemptA
      } = yield* runnerAPrompted(layerStores({ filename, busyTimeoutMs: 100 }))
      // B takes the run over once A's lease has run out, closes A's request and reruns the step:
      // its own request is open (its prompt goes to the session) before A learns of its loss.
      yield* TestClock.adjust("200 millis")
      yield* Effect.orDie(b.claim({ runId, token: "B", leaseMs: 60_000, mode: "resume" }))
      const fence = { runId, token: "B" }
      yield* Effect.orDie(
        b.settle(fence, {
          attemptId: attemptA,
          closeRequest: "interrupted",
          next: { _tag: "Continue", nodeId: "ask" }
        })
      )
      yield* Effect.orDie(b.startStep(fence, { nodeId: "ask", attemptId: "att-B" }))
      yield* Effect.orDie(b.openRequest(fence, { requestId: "req-B", nodeId: "ask", attemptId: "att-B" }))
      // A learns of its loss at its next lease renewal; its turn is still open.
      yield* TestClock.adjust("10 minutes")
      // A's claim-loss handling is over once it says so (it logs after its abort, if any).
      yield* until(
        Effect.sync(() => logged.some((m) => m.includes(`${runId}: claim lost; this runner stopped`))),
        (done) => done,
        "A stopped"
      )
      const run = yield* Effect.orDie(b.get(runId))
      expect(Option.map(run, (r) => [r.abortPending, r.openRequestId])).toEqual(Option.some([false, "req-B"]))
      // The old turn is stopped; no intent: B's prompt is its one successor.
      expect(yield* fake.aborts).toBe(1)
      expect(yield* Effect.orDie(intents.list({ runId, limit: 10 }))).toEqual([])
      // That stop is a system abort: its settle is not the user's Escape (B's run is not held),
      // and no pass afterwards sends anything of A's (no fallback, no second prompt).
      yield* fake.settle({ aborted: true })
      const { userHold } = yield* classifySettle(true).pipe(Effect.provide(app))
      expect(userHold).toBe(false)
      yield* afterSettle(false).pipe(Effect.provide(app))
      yield* Effect.orDie(onSessionStart.pipe(Effect.provide(app)))
      expect((yield* fake.sent).map((sent) => sent.message.customType)).toEqual([STEP])
      expect(yield* Effect.orDie(intents.list({ runId, limit: 10 }))).toEqual([])
      // The handoff write itself: B's later request supersedes it (and only when asked to).
      const provenance = { cause: "claimLost" as const, nodeId: "ask", attemptId: attemptA, interruption: 0 }
      const handoff = yield* Effect.orDie(b.recordHandoff(runId, provenance, { unlessSuperseded: true }))
      expect(handoff._tag).toBe("Superseded")
      expect(Option.map(yield* Effect.orDie(b.get(runId)), (r) => r.abortPending)).toEqual(Option.some(false))
    }).pipe(Effect.provide(capture))
  )
})
