/**
 * Claim transfer end to end, two app instances on one database file and one session ID: A's
 * active turn is aborted when B takes the run over, then B's run fails before prompting. The
 * claim-loss intent survives the fencing of A; B's terminal outcome reuses it and makes it
 * eligible; there is never a second intent for the one interruption, and one fallback follows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as App from "../../src/app/layers.ts"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { appDatabase, freshLocation } from "../support/backend.ts"
import { eventually, FALLBACK, STEP } from "./support.ts"
import { NoPeriodicPasses } from "../support/timing.ts"

/** While set, the prompt of node `ask` waits for it and then throws (B fails before prompting). */
let gate: Promise<void> | null = null

const flow = {
  name: "handoff",
  startAt: "ask",
  nodes: {
    ask: {
      type: "agent",
      timeoutMs: 600_000,
      prompt: () =>
        gate === null
          ? "answer"
          : gate.then(() => {
              throw new Error("the prompt could not be built")
            })
    }
  },
  edges: []
}

const instance = (filename: string, engine: { leaseMs: number; renewEveryMs: number }) =>
  Effect.map(
    Layer.build(
      App.layer({
        database: appDatabase(filename),
        workflows: [flow],
        engine
      }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
    ),
    (context) => ({
      engine: Context.get(context, Engine),
      fake: Context.get(context, PiSessionFake),
      coordinator: Context.get(context, Coordinator),
      intents: Context.get(context, TurnIntentStore),
      runs: Context.get(context, RunStore)
    })
  )

const sent = (fake: PiSessionFake["Type"], type: string) =>
  Effect.map(fake.sent, (all) => all.filter((record) => record.message.customType === type))

describe("claim transfer between two app instances on one file", () => {
  for (const origin of ["tool", "command"] as const) {
    it.live(`${origin}-started run: one claim-loss intent, reused and made eligible by the new owner`, () =>
      Effect.gen(function* () {
        gate = null
        const filename = yield* freshLocation
        // A renews rarely: its lease runs out, B takes over, and A's next renewal finds the loss.
        const a = yield* instance(filename, { leaseMs: 150, renewEveryMs: 600 })
        const b = yield* instance(filename, { leaseMs: 60_000, renewEveryMs: 20_000 })
        const started = yield* a.engine.start({ workflow: "handoff", input: {}, sessionId: "s1", origin })
        yield* a.engine.activate("s1")
        yield* eventually(sent(a.fake, STEP), (steps) => steps.length === 1)
        let release: () => void = () => undefined
        gate = new Promise<void>((resolve) => {
          release = resolve
        })
        // Past A's lease: B takes the run over; its rerun of `ask` waits at the gate.
        yield* Effect.sleep("250 millis")
        yield* b.engine.resume(started.runId)
        // A notices at its renewal: its turn is aborted and the claim-loss intent stored.
        yield* eventually(a.fake.aborts, (n) => n === 1)
        const afterAbort = yield* a.intents.list({ runId: started.runId, limit: 10 })
        expect(afterAbort.map((i) => [i.cause, i.eligibleAt === null])).toEqual([["claimLost", true]])
        // Now B's run fails before it could prompt.
        release()
        yield* eventually(
          Effect.orDie(
            Effect.map(
              b.runs.get(started.runId),
              (run) => run._tag === "Some" && run.value.state === "failed"
            )
          ),
          (failed) => failed
        )
        const intents = yield* eventually(
          Effect.orDie(a.intents.list({ runId: started.runId, limit: 10 })),
          (list) => list.every((i) => i.eligibleAt !== null)
        )
        expect(intents.map((i) => i.cause)).toEqual(["claimLost"])
        expect(intents[0]?.intentId).toBe(afterAbort[0]?.intentId)
        // One fallback for the one interruption, wherever it is delivered.
        yield* a.fake.settle({ aborted: true })
        yield* a.coordinator.syncFallbacks("settled")
        yield* b.coordinator.syncFallbacks("periodic")
        const fallbacks = [...(yield* sent(a.fake, FALLBACK)), ...(yield* sent(b.fake, FALLBACK))]
        expect(fallbacks).toHaveLength(1)
        gate = null
      }).pipe(Effect.scoped)
    )
  }
})
