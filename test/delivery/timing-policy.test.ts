/**
 * Timing policies are injectable values: a program that provides its own `TimingPolicy` gets
 * its periodic pass spacing (and keeps today's defaults when it provides none).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, TestClock } from "effect"
import * as Core from "../../src/delivery/coordinator-live.ts"
import { DEFAULT_TIMING_POLICY, TimingPolicy } from "../../src/domain/timing-policy.ts"
import { PiSessionFake } from "../../src/session/pi-session-fake.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerFake, layerTempStore } from "../../src/testing.ts"
import { sampleIntent } from "../support/fixtures.ts"

const core = (policy: Layer.Layer<never> | Layer.Layer<TimingPolicy>) =>
  Core.layer().pipe(
    Layer.provideMerge(Layer.merge(layerTempStore(), layerFake({ sessionId: "session-1" }))),
    Layer.provide(policy)
  )

/** One eligible intent owed to the idle session; how many fallbacks are sent after `wait`. */
const sentAfter = (wait: Duration.DurationInput) =>
  Effect.gen(function* () {
    const store = yield* TurnIntentStore
    yield* store.ensure(sampleIntent({ targetSessionId: "session-1", eligible: true }))
    yield* TestClock.adjust(wait)
    return (yield* (yield* PiSessionFake).sent).length
  })

describe("TimingPolicy", () => {
  it.scoped("a provided syncInterval spaces the periodic fallback pass", () =>
    Effect.gen(function* () {
      const policy = Layer.succeed(TimingPolicy, {
        ...DEFAULT_TIMING_POLICY,
        syncInterval: Duration.seconds(1)
      })
      expect(yield* sentAfter("1 second").pipe(Effect.provide(core(policy)))).toBe(1)
    })
  )

  it.scoped("without one, today's default (10 s) applies", () =>
    Effect.gen(function* () {
      expect(yield* sentAfter("1 second").pipe(Effect.provide(core(Layer.empty)))).toBe(0)
      expect(yield* sentAfter("10 seconds").pipe(Effect.provide(core(Layer.empty)))).toBe(1)
    })
  )

  it.scoped("syncInterval null turns the periodic pass off", () =>
    Effect.gen(function* () {
      const policy = Layer.succeed(TimingPolicy, { ...DEFAULT_TIMING_POLICY, syncInterval: null })
      expect(yield* sentAfter("1 hour").pipe(Effect.provide(core(policy)))).toBe(0)
    })
  )
})
