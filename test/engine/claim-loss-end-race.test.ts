/**
 * The claim-loss race at the handoff write: runner A reads the run as running under B's claim,
 * B's failure lands, then A writes its handoff and learns the run has ended. That end owes its
 * own successor (the failure), so A's abort keeps that intent: one fallback, not two.
 *
 * Deterministic interleaving on one real SQLite file: A is the whole application graph; B is a
 * second store connection that takes the run over and ends it from inside A's handoff call
 * (a store gate), i.e. exactly between A's read and A's write. The Effect clocks are TestClock
 * (no abort bound can expire while B writes); the test itself waits in real time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { layerStores } from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { layerGated } from "../../src/testing/store-faults.ts"
import { untilOnRealTimers as until } from "../support/poll.ts"
import { runnerAPrompted, runnerB } from "../support/claim-loss.ts"
import { tempDbPath } from "../support/temp-db.ts"

const FALLBACK = "pi-workflows-deferred-turn"

describe("claim loss: the new owner's end lands between the old runner's read and its handoff write", () => {
  it.scoped("the old runner's abort keeps the end's intent: one fallback for the run", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const b = yield* runnerB(filename)
      let armed: string | null = null
      // B's failure, stored the moment A's handoff write starts (after A's read saw B's claim).
      const endUnderB = (runId: string) =>
        Effect.gen(function* () {
          yield* b.settle(
            { runId, token: "B" },
            {
              next: {
                _tag: "End",
                state: "failed",
                error: { message: "the prompt could not be built", nodeId: "ask", original: null }
              }
            }
          )
        }).pipe(Effect.orDie)
      const gate = (operation: string) => {
        if (operation !== "recordHandoff" || armed === null) return Effect.void
        const runId = armed
        armed = null
        return endUnderB(runId)
      }
      const { app, fake, intents, runId, requestId } = yield* runnerAPrompted(
        layerGated(gate).pipe(Layer.provide(layerStores({ filename, busyTimeoutMs: 100 })))
      )
      // B takes the run over once A's lease has run out.
      yield* TestClock.adjust("200 millis")
      yield* Effect.orDie(b.claim({ runId, token: "B", leaseMs: 60_000, mode: "resume" }))
      armed = runId
      // The agent answers A's prompt: A's write is fenced out, so A learns of the loss and
      // stops its turn (claim loss), with B's end landing inside A's handoff write.
      yield* Effect.forkScoped(
        runTool({ _tag: "submit", requestId, output: { ok: true } }).pipe(Effect.provide(app))
      )
      yield* until(fake.aborts, (n) => n === 1, "A's abort")
      expect(armed).toBeNull()
      const ended = yield* Effect.orDie(b.get(runId))
      expect(Option.map(ended, (r) => r.state)).toEqual(Option.some("failed"))
      // Settles and session starts (reconciliation, fallback passes) until nothing is pending.
      const settle = Effect.gen(function* () {
        if ((yield* fake.phase) !== "idle") yield* fake.settle({ aborted: true })
        const { userHold } = yield* classifySettle(true)
        yield* afterSettle(userHold)
        yield* onSessionStart
      }).pipe(Effect.provide(app))
      const rows = yield* until(
        Effect.zipRight(settle, intents.list({ runId, limit: 10 })),
        (list) => list.length > 0 && list.every((i) => i.resolvedAt !== null),
        "every intent resolved"
      )
      expect(rows.map((i) => [i.cause, i.resolution])).toEqual([["failed", "fallback"]])
      const fallbacks = (yield* fake.branch).filter((m) => m.customType === FALLBACK)
      expect(fallbacks).toHaveLength(1)
    })
  )
})
