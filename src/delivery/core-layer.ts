/**
 * The successor-turn core in one layer: Coordinator, the live SourceEvents (event policy and
 * abort ordering) and the AbortBookkeeping they share. Needs a TurnIntentStore and a PiSession.
 */
import { Layer } from "effect"
import * as AbortBookkeepingModule from "../interruption/abort-bookkeeping.ts"
import type { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import * as Interruptions from "../interruption/interruptions.ts"
import type { SourceEvents } from "../interruption/source-events.ts"
import type { PiSession } from "../session/pi-session.ts"
import type { TurnIntentStore } from "../store/turn-intent-store.ts"
import type { Coordinator } from "./coordinator.ts"
import * as CoordinatorLive from "./coordinator-live.ts"

export interface CoreOptions {
  readonly coordinator?: CoordinatorLive.CoordinatorOptions
  readonly interruptions?: Interruptions.InterruptionsOptions
}

export const layerCore = (
  options: CoreOptions = {}
): Layer.Layer<Coordinator | SourceEvents | AbortBookkeeping, never, TurnIntentStore | PiSession> =>
  Layer.merge(CoordinatorLive.layer(options.coordinator), Interruptions.layer(options.interruptions)).pipe(
    Layer.provideMerge(AbortBookkeepingModule.layer)
  )
