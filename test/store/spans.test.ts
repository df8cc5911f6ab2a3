/**
 * Every store operation is a named span (`RunStore.reserve`, `NotificationStore.insert`, …), so a
 * downstream tracer can follow a turn through the stores.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type RecordedSpan, recordingTracer } from "../support/recording-tracer.ts"
import { layerStores } from "../../src/app/layers.ts"
import { LaunchStore } from "../../src/store/launch-store.ts"
import { NotificationStore } from "../../src/store/notification-store.ts"
import { RunStore } from "../../src/store/run-store.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { tempDbPath } from "../support/temp-db.ts"

describe("store spans", () => {
  it.scoped("each store's operations are spans named after the service and the operation", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(layerStores({ filename: yield* tempDbPath }))
      const runs = Context.get(context, RunStore)
      const intents = Context.get(context, TurnIntentStore)
      const notifications = Context.get(context, NotificationStore)
      const launches = Context.get(context, LaunchStore)
      const spans: Array<RecordedSpan> = []
      const traced = Effect.withTracer(recordingTracer(yield* Effect.tracer, spans))
      yield* traced(
        runs.reserve({
          runId: "r1",
          workflowName: "w",
          workflowRef: "w",
          revision: null,
          sourceFingerprint: "f",
          snapshot: {},
          targetSessionId: "s1",
          origin: "tool",
          input: {},
          startAt: "a",
          maxSteps: 5
        })
      )
      yield* traced(runs.get("r1"))
      yield* traced(intents.get("i1"))
      yield* traced(notifications.latest("r1", "progress"))
      yield* traced(launches.get("r1"))
      expect(spans.map((s) => s.name)).toEqual(
        expect.arrayContaining([
          "RunStore.reserve",
          "RunStore.get",
          "TurnIntentStore.get",
          "NotificationStore.latest",
          "LaunchStore.get"
        ])
      )
    })
  )
})
