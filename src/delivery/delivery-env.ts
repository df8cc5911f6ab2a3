/** What natural delivery and fallback sync share inside one coordinator. */
import { Duration, Effect, type Either, Ref, Schedule } from "effect"
import type { ClaimNotHeld, IntentNotFound, InvalidInput, StoreFailure } from "../domain/errors.ts"
import { resolutionMessageId } from "../domain/identity.ts"
import type { Resolution, TurnIntent } from "../domain/turn-intent.ts"
import type { AbortBookkeepingService } from "../interruption/abort-bookkeeping.ts"
import type { CustomMessage, PiSessionService } from "../session/pi-session.ts"
import type { TurnIntentStoreService } from "../store/turn-intent-store.ts"

export interface DeliveryEnv {
  readonly store: TurnIntentStoreService
  readonly session: PiSessionService
  readonly bookkeeping: AbortBookkeepingService
  /** This coordinator's claimant prefix; each natural delivery and the sync get their own token. */
  readonly token: string
  readonly leaseMs: number
  readonly claimRetryMs: number
  readonly resolveAttempts: number
  /** Runs with a natural delivery in progress, with how many. */
  readonly naturalInFlight: Ref.Ref<ReadonlyMap<string, number>>
  readonly nextNatural: Ref.Ref<number>
  /**
   * Intents whose message this coordinator sent but whose resolution the store did not take,
   * with the path that sent it. Pi may not show the message in the branch yet, so branch repair
   * alone could miss it: these are resolved again, never sent again.
   */
  readonly sentUnresolved: Ref.Ref<ReadonlyMap<string, Resolution>>
  /** The fallback message for an intent (the factual one, or a provided `FallbackComposer`). */
  readonly composeFallback: (intent: TurnIntent) => Effect.Effect<CustomMessage>
}

type ResolveError = ClaimNotHeld | IntentNotFound | InvalidInput | StoreFailure

/**
 * Store the resolution, retrying transient store failures a few times. A claim that is no
 * longer held will not come back, so that is not retried.
 */
export const resolveIntent = (
  env: DeliveryEnv,
  intent: TurnIntent,
  token: string,
  resolution: Resolution
): Effect.Effect<Either.Either<TurnIntent, ResolveError>> =>
  env.store
    .resolve({
      intentId: intent.intentId,
      token,
      resolution,
      messageId: resolutionMessageId(intent.intentId, resolution)
    })
    .pipe(
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(20)),
        times: Math.max(0, env.resolveAttempts - 1),
        while: (error) => error._tag === "StoreFailure"
      }),
      Effect.either
    )

/**
 * Store the resolution of a message just sent, remembering it when the store refuses, so a later
 * pass of this coordinator resolves it instead of sending a second copy.
 */
export const resolveSent = (
  env: DeliveryEnv,
  intent: TurnIntent,
  token: string,
  resolution: Resolution
): Effect.Effect<Either.Either<TurnIntent, ResolveError>> =>
  Effect.tap(resolveIntent(env, intent, token, resolution), (resolved) =>
    Ref.update(env.sentUnresolved, (owed) => {
      const next = new Map(owed)
      if (resolved._tag === "Right") next.delete(intent.intentId)
      else next.set(intent.intentId, resolution)
      return next
    })
  )

/** The path that already sent this intent's message, if this coordinator did and could not record it. */
export const alreadySent = (env: DeliveryEnv, intentId: string): Effect.Effect<Resolution | undefined> =>
  Effect.map(Ref.get(env.sentUnresolved), (owed) => owed.get(intentId))

/** Give a claim back; a failure only means the lease expires on its own. */
export const releaseClaim = (env: DeliveryEnv, intent: TurnIntent, token: string): Effect.Effect<void> =>
  env.store.release({ intentId: intent.intentId, token }).pipe(Effect.ignore)

export const hasNaturalInFlight = (env: DeliveryEnv, runId: string): Effect.Effect<boolean> =>
  Effect.map(Ref.get(env.naturalInFlight), (runs) => (runs.get(runId) ?? 0) > 0)
