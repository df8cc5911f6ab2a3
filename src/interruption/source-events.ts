/**
 * SourceEvents: the explicit interface through which the engine (and the tool and command
 * adapters) report workflow transitions to the successor-turn core. The engine never reaches
 * into the coordinator; it publishes data and the core applies the event policy.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { SourceEvent } from "../domain/event-policy.ts"

export interface PublishResult {
  /** The intent created or reused for the event, if the policy creates one. */
  readonly intentId: string | null
  /** Set when the intent could not be persisted (the successor-turn guarantee is weakened). */
  readonly warning: string | null
}

export interface SourceEventsService {
  /** Never fails: a store failure must not stop an abort or a terminal transition. */
  readonly publish: (event: SourceEvent) => Effect.Effect<PublishResult>
}

export class SourceEvents extends Context.Tag("pi-workflow-turns/SourceEvents")<
  SourceEvents,
  SourceEventsService
>() {}

/** A sink that records events and does nothing else (engine tests; observers). */
export const layerRecording = (ref: Ref.Ref<ReadonlyArray<SourceEvent>>): Layer.Layer<SourceEvents> =>
  Layer.succeed(SourceEvents, {
    publish: (event) =>
      Ref.update(ref, (events) => [...events, event]).pipe(Effect.as({ intentId: null, warning: null }))
  })
