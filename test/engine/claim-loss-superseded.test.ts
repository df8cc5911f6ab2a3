/**
 * Claim loss after the new owner's newer prompt (engine-simulation seed 9407): runner B took the
 * run over and opened a newer attempt (its prompt went to the session) before runner A learned
 * that its claim was lost. B's prompt is the session's successor turn, so A records no handoff,
 * aborts nothing and stores no claim-loss intent; otherwise the run's later end under B (the
 * agent's cancel) owes a second terminal message beside A's claim-loss fallback.
 *
 * Real SQLite file shared by A (the whole application graph) and B (a second store connection).
 * The Effect clocks are TestClock; the test waits in real time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Option, TestClock } from "effect"
import { layerAppWith, layerStores } from "../../src/app/layers.ts"
import { runTool } from "../../src/app/tool-actions.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSqlite from "../../src/store/run-store-sqlite.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { databaseLayerAt } from "../support/backend.ts"
import { tempDbPath } from "../support/temp-db.ts"

const STEP = "pi-workflows-agent-step"

const patient = {
  name: "patient",
  startAt: "ask",
  nodes: { ask: { type: "agent", prompt: "answer", timeoutMs: null } },
  edges: []
}

/** Real-time polling: the Effect clock is TestClock, which nothing here advances meanwhile. */
const until = <A, E>(effect: Effect.Effect<A, E>, check: (a: A) => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      const value = yield* Effect.orDie(effect)
      if (check(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* Effect.dieMessage(`not reached: ${what}`)
  })

/** Messages logged by the application, to learn when A's runner has stopped. */
const logged: Array<string> = []
const capture = Logger.add(Logger.make(({ message }) => logged.push(String(message))))

describe("claim loss after the new owner opened a newer attempt", () => {
  it.scoped("the old runner records no handoff, aborts nothing and stores no claim-loss intent", () =>
    Effect.gen(function* () {
      const filename = yield* tempDbPath
      const b = Context.get(
        yield* Layer.build(RunStoreSqlite.layer.pipe(Layer.provideMerge(databaseLayerAt(filename)))),
        RunStore
      )
      const app = yield* Layer.build(
        layerAppWith(layerStores({ filename, busyTimeoutMs: 100 }), {
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
      // B takes the run over once A's lease has run out and opens its own attempt of the step.
      yield* TestClock.adjust("200 millis")
      yield* Effect.orDie(b.claim({ runId, token: "B", leaseMs: 60_000, mode: "resume" }))
      const fence = { runId, token: "B" }
      yield* Effect.orDie(b.startStep(fence, { nodeId: "ask", attemptId: "att-B" }))
      // The agent answers A's prompt: A's write is fenced out and A learns of its loss.
      yield* Effect.either(
        runTool({ _tag: "submit", requestId, output: { ok: true } }).pipe(Effect.provide(app))
      )
      // A's claim-loss handling is over once it says so (it logs after its abort, if any).
      yield* until(
        Effect.sync(() => logged.some((m) => m.includes(`${runId}: claim lost; this runner stopped`))),
        (done) => done,
        "A stopped"
      )
      const run = yield* Effect.orDie(b.get(runId))
      expect(Option.map(run, (r) => [r.abortPending, r.currentAttemptId])).toEqual(
        Option.some([false, "att-B"])
      )
      expect(yield* fake.aborts).toBe(0)
      expect(yield* Effect.orDie(intents.list({ runId, limit: 10 }))).toEqual([])
      // The handoff write itself, whatever the reader saw: a newer attempt supersedes it.
      const handoff = yield* Effect.orDie(
        b.recordHandoff(runId, { cause: "claimLost", nodeId: "ask", attemptId: "att-A", interruption: 0 })
      )
      expect(handoff._tag).toBe("Superseded")
      expect(Option.map(yield* Effect.orDie(b.get(runId)), (r) => r.abortPending)).toEqual(Option.some(false))
    }).pipe(Effect.provide(capture))
  )
})
