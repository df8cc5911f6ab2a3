/**
 * The live Coordinator over the turn-intent store, the Pi session and the abort bookkeeping.
 * Sync passes of one coordinator run one at a time; a scoped fiber runs the periodic pass.
 * Natural deliveries run concurrently and are arbitrated by store claims.
 */
import { randomUUID } from "node:crypto"
import { Duration, Effect, Layer, Option, Ref } from "effect"
import type { Resolution } from "../domain/turn-intent.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import { PiSession } from "../session/pi-session.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { Coordinator, type CoordinatorService } from "./coordinator.ts"
import type { DeliveryEnv } from "./delivery-env.ts"
import { FallbackComposer } from "./fallback-composer.ts"
import { fallbackMessage } from "./fallback-message.ts"
import { syncPass } from "./fallback-sync.ts"
import { deliverNatural } from "./natural-delivery.ts"

export interface CoordinatorOptions {
  /** Claim lease for one delivery (default 30 s). */
  readonly leaseMs?: number
  /** Spacing of the periodic idle sync pass (default 10 s); null turns it off. */
  readonly syncIntervalMs?: number | null
  /** Delay between claim attempts while another claimant holds an intent (default 500 ms). */
  readonly claimRetryMs?: number
  /** Attempts to store a resolution after a successful send (default 4). */
  readonly resolveAttempts?: number
  /** Claimant identity prefix (default a random one per coordinator). */
  readonly token?: string
}

export const DEFAULT_LEASE_MS = 30_000
export const DEFAULT_SYNC_INTERVAL_MS = 10_000

export const make = (options: CoordinatorOptions = {}) =>
  Effect.gen(function* () {
    const composer = yield* Effect.serviceOption(FallbackComposer)
    const env: DeliveryEnv = {
      store: yield* TurnIntentStore,
      session: yield* PiSession,
      bookkeeping: yield* AbortBookkeeping,
      token: options.token ?? `coordinator:${randomUUID()}`,
      leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
      claimRetryMs: options.claimRetryMs ?? 500,
      resolveAttempts: options.resolveAttempts ?? 4,
      naturalInFlight: yield* Ref.make<ReadonlyMap<string, number>>(new Map()),
      nextNatural: yield* Ref.make(1),
      sentUnresolved: yield* Ref.make<ReadonlyMap<string, Resolution>>(new Map()),
      composeFallback: Option.match(composer, {
        onNone: () => (intent) => Effect.succeed(fallbackMessage(intent)),
        onSome: (provided) => provided.compose
      })
    }
    const serial = yield* Effect.makeSemaphore(1)
    const pass = syncPass(env)
    const syncFallbacks: CoordinatorService["syncFallbacks"] = (trigger) =>
      serial.withPermits(1)(pass(trigger))
    const service: CoordinatorService = {
      deliverNatural: deliverNatural(env),
      syncFallbacks,
      onSettled: Effect.zipRight(env.bookkeeping.clear, syncFallbacks("settled")),
      onSessionStart: syncFallbacks("sessionStart")
    }
    const interval = options.syncIntervalMs === undefined ? DEFAULT_SYNC_INTERVAL_MS : options.syncIntervalMs
    if (interval !== null) {
      yield* syncFallbacks("periodic").pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("periodic fallback sync failed", cause)),
        Effect.delay(Duration.millis(interval)),
        Effect.forever,
        Effect.forkScoped
      )
    }
    return service
  })

/** Coordinator (with its periodic sync fiber, stopped when the layer's scope closes). */
export const layer = (
  options: CoordinatorOptions = {}
): Layer.Layer<Coordinator, never, TurnIntentStore | PiSession | AbortBookkeeping> =>
  Layer.scoped(Coordinator, make(options))
