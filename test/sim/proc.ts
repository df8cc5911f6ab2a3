/**
 * One runner process of the simulated world: its generation in its slot, the scope a crash
 * closes, and the core's parts over its own store connection.
 */
import { Effect, type Scope } from "effect"
import type { CoordinatorService } from "../../src/delivery/coordinator.ts"
import type { SourceEventsService } from "../../src/interruption/source-events.ts"
import type { TurnIntentStoreService } from "../../src/store/turn-intent-store.ts"
import type { StoreFaultsControl } from "../../src/testing/store-faults.ts"
import type { ProcId } from "./schedule.ts"

export interface Proc {
  readonly slot: ProcId
  readonly generation: number
  readonly scope: Scope.CloseableScope
  readonly coordinator: CoordinatorService
  readonly events: SourceEventsService
  readonly faults: StoreFaultsControl
  readonly store: TurnIntentStoreService
}

/**
 * Deliberate bugs, to prove the invariants can fail: send every resolving message twice; let
 * the core see no shutdown or hold; report fallback sends as done without delivering them;
 * let the core forget the system aborts in flight.
 */
export type Mutation = "doubleSend" | "ignoreLifecycle" | "dropFallback" | "forgetAborts"

/** Run in the process: a crash of the process stops it wherever it is. */
export const fork = <A, E>(proc: Proc, effect: Effect.Effect<A, E>) =>
  Effect.asVoid(Effect.forkIn(Effect.ignore(effect), proc.scope))
