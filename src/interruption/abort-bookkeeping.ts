/**
 * AbortBookkeeping: the system aborts this process requested whose turn has not settled yet.
 * In memory on purpose: it only describes the live turn of this Pi session. While it is not
 * clear, fallback delivery waits and natural messages wait for the turn to settle, so nothing
 * is sent into an aborting turn (Pi would lose it).
 */
import { Context, Effect, Layer, Ref } from "effect"

export interface AbortBookkeepingService {
  /** Note a system abort on behalf of this intent (called right before `PiSession.abort`). */
  readonly record: (intentId: string) => Effect.Effect<void>
  /** Intent IDs of system aborts still in flight, in the order they were recorded. */
  readonly inFlight: Effect.Effect<ReadonlyArray<string>>
  /** Forget every in-flight abort (the turn settled); returns what was cleared. */
  readonly clear: Effect.Effect<ReadonlyArray<string>>
}

export class AbortBookkeeping extends Context.Tag("pi-workflow-turns/AbortBookkeeping")<
  AbortBookkeeping,
  AbortBookkeepingService
>() {}

export const make: Effect.Effect<AbortBookkeepingService> = Effect.map(
  Ref.make<ReadonlyArray<string>>([]),
  (ref) => ({
    record: (intentId) => Ref.update(ref, (ids) => (ids.includes(intentId) ? ids : [...ids, intentId])),
    inFlight: Ref.get(ref),
    clear: Ref.getAndSet(ref, [])
  })
)

export const layer: Layer.Layer<AbortBookkeeping> = Layer.effect(AbortBookkeeping, make)
