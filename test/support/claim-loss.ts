/**
 * The two runners of a claim-loss test on one real SQLite file: B is a second store connection
 * that takes the run over; A is the whole application graph on `stores` (its lease runs out
 * after 150 ms and it does not renew before learning of its loss), whose run of `patient` has
 * sent its step prompt. Each test then decides how B and A meet.
 */
import { Context, Effect, Layer } from "effect"
import * as App from "../../src/app/layers.ts"
import { Engine } from "../../src/engine/engine.ts"
import { RunStore } from "../../src/store/run-store.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, PiSessionFake } from "../../src/testing.ts"
import { databaseLayerAt } from "./backend.ts"
import { untilOnRealTimers as until } from "./poll.ts"
import { patient } from "./workflows.ts"
import { NoPeriodicPasses } from "./timing.ts"

export const STEP = "pi-workflows-agent-step"

/** B: another runner's connection to the same file. */
export const runnerB = (filename: string) =>
  Effect.map(Layer.build(RunStoreSql.layer.pipe(Layer.provideMerge(databaseLayerAt(filename)))), (context) =>
    Context.get(context, RunStore)
  )

/** A, with its run started and its step prompt in the session; the prompt's request and attempt. */
export const runnerAPrompted = <E>(stores: Layer.Layer<App.StoreServices, E>) =>
  Effect.gen(function* () {
    const app = yield* Layer.build(
      App.layerWith(stores, {
        workflows: [patient],
        engine: { leaseMs: 150, renewEveryMs: 600_000 }
      }).pipe(Layer.provide(NoPeriodicPasses), Layer.provideMerge(layerFake({ sessionId: "s1" })))
    )
    const engine = Context.get(app, Engine)
    const fake = Context.get(app, PiSessionFake)
    const { runId } = yield* Effect.orDie(
      engine.start({ workflow: "patient", input: {}, sessionId: "s1", origin: "tool" })
    )
    yield* Effect.orDie(engine.activate("s1"))
    const branch = yield* until(fake.branch, (m) => m.some((x) => x.customType === STEP), "A's step prompt")
    const details = branch.find((m) => m.customType === STEP)?.details
    const field = (name: string) =>
      typeof details === "object" && details !== null && name in details
        ? String(Reflect.get(details, name))
        : ""
    return {
      app,
      engine,
      fake,
      intents: Context.get(app, TurnIntentStore),
      runId,
      requestId: field("requestId"),
      attemptId: field("attemptId")
    }
  })
