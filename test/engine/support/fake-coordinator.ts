/**
 * A recording Coordinator for engine tests: every natural message is kept in order and can be
 * awaited one by one; sends can be scripted to fail.
 */
import { Effect, Layer, Queue, Ref } from "effect"
import {
  Coordinator,
  type CoordinatorService,
  type NaturalMessage
} from "../../../src/delivery/coordinator.ts"
import { SendFailed } from "../../../src/session/pi-session.ts"

export interface RecordingCoordinator {
  readonly layer: Layer.Layer<Coordinator>
  /** Everything delivered so far, oldest first. */
  readonly delivered: Effect.Effect<ReadonlyArray<NaturalMessage>>
  /** The next delivered message not yet taken (waits for it). */
  readonly take: Effect.Effect<NaturalMessage>
  /** Make the next `count` sends fail with SendFailed. */
  readonly failNextSends: (count: number) => Effect.Effect<void>
}

export const makeRecordingCoordinator: Effect.Effect<RecordingCoordinator> = Effect.gen(function* () {
  const queue = yield* Queue.unbounded<NaturalMessage>()
  const log = yield* Ref.make<ReadonlyArray<NaturalMessage>>([])
  const failures = yield* Ref.make(0)
  const idle = { delivered: [], repaired: [], failed: [], skipped: "fake coordinator" }
  const service: CoordinatorService = {
    deliverNatural: (message) =>
      Effect.gen(function* () {
        const fail = yield* Ref.modify(failures, (n) => [n > 0, Math.max(0, n - 1)] as const)
        if (fail) return yield* new SendFailed({ message: "scripted send failure" })
        yield* Ref.update(log, (all) => [...all, message])
        yield* Queue.offer(queue, message)
        return { turnIntentId: null, sent: true, note: null }
      }),
    syncFallbacks: () => Effect.succeed(idle),
    onSettled: Effect.succeed(idle),
    onSessionStart: Effect.succeed(idle)
  }
  return {
    layer: Layer.succeed(Coordinator, service),
    delivered: Ref.get(log),
    take: Queue.take(queue),
    failNextSends: (count) => Ref.set(failures, count)
  }
})
