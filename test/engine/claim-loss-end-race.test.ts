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
import { Context, Effect, Layer, Option, TestClock } from "effect"
import { layerAppWith, layerStores } from "../../src/app/layers.ts"
import { afterSettle, classifySettle, onSessionStart } from "../../src/app/session-hooks.ts"
import { runTool } from "../../src/app/tool-actions.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSqlite from "../../src/store/run-store-sqlite.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerGated } from "../../src/testing/store-guards.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { databaseLayerAt } from "../support/backend.ts"
import { untilOnRealTimers as until } from "../support/poll.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { patient } from "../support/workflows.ts"

const STEP = "pi-workflows-agent-step"
const FALLBACK = "pi-workflows-deferred-turn"

describe("claim loss: the new owner's end lands between the old runner's read and its handoff write", () => {
  it.scoped("the old runner's abort keeps the end's intent: one fallback for the run", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      // B: another runner's connection to the same file.
      const b = Context.get(
        yield* Layer.build(RunStoreSqlite.layer.pipe(Layer.provideMerge(databaseLayerAt(filename)))),
        RunStore
      )
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
      const app = yield* Layer.build(
        layerAppWith(layerGated(gate).pipe(Layer.provide(layerStores({ filename, busyTimeoutMs: 100 }))), {
          workflows: [patient],
          // A's lease runs out after 150 ms and it does not renew before learning of its loss.
          engine: { leaseMs: 150, renewEveryMs: 600_000 },
          core: { coordinator: { syncIntervalMs: null } },
          maintenanceIntervalMs: null
        }).pipe(Layer.provideMerge(layerFake({ sessionId: "s1" })))
      )
      const engine = Context.get(app, Engine)
      const fake = Context.get(app, PiSessionFake)
      const intents = Context.get(app, TurnIntentStore)
      const { runId } = yield* Effect.orDie(
        engine.start({ workflow: "patient", input: {}, sessionId: "s1", origin: "tool" })
      )
      yield* Effect.orDie(engine.activate("s1"))
      const branch = yield* until(fake.branch, (m) => m.some((x) => x.customType === STEP), "A's step prompt")
      const details = branch.find((m) => m.customType === STEP)?.details
      const requestId =
        typeof details === "object" && details !== null && "requestId" in details
          ? String(details.requestId)
          : ""
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
