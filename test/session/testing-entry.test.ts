/** The users' entry point: a downstream program tests itself with the fake session and a temp store. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Coordinator } from "../../src/delivery/coordinator.ts"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { SourceEvents } from "../../src/interruption/source-events.ts"
import { layerFake, layerTempStore, PiSessionFake } from "../../src/testing.ts"
import { run, terminal } from "../conformance/harness.ts"
import { NoSyncPass } from "../support/timing.ts"

const TestLayer = Core.layer().pipe(
  Layer.provide(NoSyncPass),
  Layer.provideMerge(Layer.merge(layerFake({ sessionId: "session-1" }), layerTempStore()))
)

describe("src/testing.ts", () => {
  it.scoped("composes the core over the fake session and a temp-file store", () =>
    Effect.gen(function* () {
      const events = yield* SourceEvents
      const coordinator = yield* Coordinator
      const fake = yield* PiSessionFake
      yield* events.publish(terminal("failed", null, { run: run() }))
      const report = yield* coordinator.onSessionStart
      expect(report.delivered).toHaveLength(1)
      expect((yield* fake.sent)[0]?.message.customType).toBe("pi-workflows-deferred-turn")
    }).pipe(Effect.provide(TestLayer))
  )
})
