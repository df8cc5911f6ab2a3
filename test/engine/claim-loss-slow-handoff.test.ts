/**
 * The claim-loss race when the old runner's handoff write is slow: runner A reads the run as
 * running under B's claim and writes its handoff; that write does not answer within
 * HANDOFF_FIRST_MS, and B's end lands meanwhile. A goes on (its `claimLost` intent is stored
 * and the turn aborted) while its handoff is still unanswered. Judged by what the model saw:
 * when B's end owes its own successor (a failure) the run gets exactly one fallback, that end's;
 * when it owes none (a direct user cancel) the claim loss is retired and no fallback goes out.
 *
 * Deterministic interleaving on one real SQLite file: A is the whole application graph; B is a
 * second store connection that takes the run over and ends it from inside A's first handoff
 * call, which then hangs until the test moves A's TestClock past the bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, TestClock } from "effect"
import { layerStores } from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool.ts"
import { HANDOFF_FIRST_MS } from "../../src/engine/interrupt.ts"
import type { TerminalRunState } from "../../src/store/run-store.ts"
import { StoreFailure } from "../../src/store/store-errors.ts"
import { layerGated } from "../../src/testing/store-faults.ts"
import { untilOnRealTimers as until } from "../support/poll.ts"
import { runnerAPrompted, runnerB } from "../support/claim-loss.ts"
import { tempDbPath } from "../support/temp-db.ts"

const FALLBACK = "pi-workflows-deferred-turn"

/**
 * Run the race with B ending the run in `state`; the run's intents and fallbacks afterwards.
 * `lateWrite`: A's handoff write after its bound answers (`Ended`), or fails like the store.
 */
const race = (state: Extract<TerminalRunState, "failed" | "cancelled">, lateWrite: "answers" | "fails") =>
  Effect.gen(function* () {
    const filename = yield* tempDbPath
    const b = yield* runnerB(filename)
    let armed: string | null = null
    let landed = false
    const endUnderB = (runId: string) =>
      b
        .settle(
          { runId, token: "B" },
          {
            next: {
              _tag: "End",
              state,
              error:
                state === "failed"
                  ? { message: "the prompt could not be built", nodeId: "ask", original: null }
                  : { message: "cancelled by the user", nodeId: "ask", original: null },
              ...(state === "cancelled" ? { cancelledBy: "user" as const } : {})
            }
          }
        )
        .pipe(Effect.orDie)
    // A's first handoff write: B's end lands, then the write does not answer (until A's bound).
    const gate = (operation: string): Effect.Effect<void, StoreFailure> => {
      if (operation !== "recordHandoff") return Effect.void
      if (armed === null) {
        return landed && lateWrite === "fails"
          ? Effect.fail(new StoreFailure({ operation, reason: "Lock", message: "database is locked" }))
          : Effect.void
      }
      const runId = armed
      armed = null
      return endUnderB(runId).pipe(
        Effect.zipRight(
          Effect.sync(() => {
            landed = true
          })
        ),
        Effect.zipRight(Effect.never)
      )
    }
    const { app, fake, intents, runId, requestId } = yield* runnerAPrompted(
      layerGated(gate).pipe(Layer.provide(layerStores({ filename, busyTimeoutMs: 100 })))
    )
    // B takes the run over once A's lease has run out.
    yield* TestClock.adjust("200 millis")
    yield* Effect.orDie(b.claim({ runId, token: "B", leaseMs: 60_000, mode: "resume" }))
    armed = runId
    // The agent answers A's prompt: A's write is fenced out, so A learns of the loss and stops
    // its turn (claim loss); its first handoff write lets B's end land, then hangs.
    yield* Effect.forkScoped(
      runTool({ _tag: "submit", requestId, output: { ok: true } }).pipe(Effect.provide(app))
    )
    yield* until(
      Effect.sync(() => landed),
      (done) => done,
      "B's end inside A's handoff write"
    )
    const ended = yield* Effect.orDie(b.get(runId))
    expect(Option.map(ended, (r) => r.state)).toEqual(Option.some(state))
    // A's bound passes while its handoff write is still unanswered: A goes on without it.
    yield* TestClock.adjust(`${HANDOFF_FIRST_MS + 1} millis`)
    yield* until(fake.aborts, (n) => n === 1, "A's abort")
    // Settles and session starts (reconciliation, fallback passes) until nothing is pending.
    const settle = Effect.gen(function* () {
      if ((yield* fake.phase) !== "idle") yield* fake.settle({ aborted: true })
      const { userHold } = yield* classifySettle(true)
      yield* afterSettle(userHold)
      yield* onSessionStart
    }).pipe(Effect.provide(app))
    // The user's cancel retires the claim loss (pending, never eligible): nothing to wait for.
    yield* until(
      Effect.zipRight(settle, intents.list({ runId, limit: 10 })),
      (list) => list.length > 0 && (state === "cancelled" || list.every((i) => i.resolvedAt !== null)),
      "every intent resolved"
    )
    // A few more passes: nothing left to deliver may still go out.
    for (let i = 0; i < 3; i++) yield* settle
    const rows = yield* intents.list({ runId, limit: 10 })
    const fallbacks = (yield* fake.branch).filter((m) => m.customType === FALLBACK)
    return { rows, fallbacks }
  })

describe("claim loss: the old runner's handoff write is slow and the new owner's end lands meanwhile", () => {
  for (const lateWrite of ["answers", "fails"] as const) {
    it.scoped(
      `an end that owes its own successor (a failure) is the run's one fallback (late write ${lateWrite})`,
      () =>
        Effect.gen(function* () {
          const { rows, fallbacks } = yield* race("failed", lateWrite)
          expect(fallbacks).toHaveLength(1)
          const failed = rows.find((i) => i.cause === "failed")
          expect(failed?.resolution).toBe("fallback")
          // A's claim-loss intent is answered by that same message, never by one of its own.
          expect(rows.map((i) => i.cause).sort()).toEqual(["claimLost", "failed"])
          for (const intent of rows) {
            expect([intent.resolution, intent.resolutionMessageId]).toEqual([
              failed?.resolution,
              failed?.resolutionMessageId
            ])
          }
        })
    )

    it.scoped(
      `an end the user cancelled owes nothing: the claim loss is retired, no fallback (late write ${lateWrite})`,
      () =>
        Effect.gen(function* () {
          const { rows, fallbacks } = yield* race("cancelled", lateWrite)
          // Retired: pending and never eligible (before: its own fallback after the user's cancel).
          expect(rows.map((i) => [i.cause, i.resolution, i.eligibleAt])).toEqual([["claimLost", null, null]])
          expect(fallbacks).toHaveLength(0)
        })
    )
  }
})
