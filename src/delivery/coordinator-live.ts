/**
 * The live Coordinator over the turn-intent store, the Pi session and the abort bookkeeping.
 * Sync passes of one coordinator run one at a time; a scoped fiber runs the periodic pass.
 * Natural deliveries run concurrently and are arbitrated by store claims.
 */
import { Duration, Effect, Layer, Option, Ref } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { AbortBookkeeping } from "../interruption/abort-bookkeeping.ts"
import { PiSession } from "../session/pi-session.ts"
import { TurnIntentStore } from "../store/turn-intent-store.ts"
import { Coordinator, type CoordinatorService, type NaturalMessage, type SyncTrigger } from "./coordinator.ts"
import { CrashPoints, noop as noopCrashPoints } from "./crash-points.ts"
import type { DeliveryEnv, Unconfirmed } from "./delivery-env.ts"
import { FallbackComposer } from "./fallback-composer.ts"
import { fallbackMessage } from "./fallback-message.ts"
import { syncPass } from "./fallback-sync.ts"
import { deliverNatural } from "./natural-delivery.ts"
import { isDeadOwner, ownerToken } from "./owner.ts"
import { leaseCoversWriteDelay, WRITE_DELAY_BOUND_MS } from "./protocol.ts"
import { TimingPolicy, toMillis } from "./timing-policy.ts"

export interface CoordinatorOptions {
  /** Claim lease for one delivery (default 30 s); it must exceed `writeDelayBoundMs`. */
  readonly leaseMs?: number
  /**
   * How long Pi may take to write a sent message (default `WRITE_DELAY_BOUND_MS`, 5 s): after
   * that, a message missing from the branch of an idle session counts as lost.
   */
  readonly writeDelayBoundMs?: number
  /** Whether a claim token names a dead owner (default: a gone process of this machine's boot). */
  readonly isDeadOwner?: (token: string) => boolean
  /** Spacing of the periodic idle sync pass (default 10 s); null turns it off. */
  readonly syncIntervalMs?: number | null
  /** Delay between claim attempts while another claimant holds an intent (default 500 ms). */
  readonly claimRetryMs?: number
  /** Attempts to store a resolution after a successful send (default 4). */
  readonly resolveAttempts?: number
  /** Claimant identity prefix (default one naming this process, owner.ts, plus a random part). */
  readonly token?: string
}

export const make = (options: CoordinatorOptions = {}) =>
  Effect.gen(function* () {
    const policy = yield* TimingPolicy
    const leaseMs = options.leaseMs ?? toMillis(policy.deliveryLease)
    const writeDelayBoundMs = options.writeDelayBoundMs ?? WRITE_DELAY_BOUND_MS
    if (!leaseCoversWriteDelay(leaseMs, writeDelayBoundMs)) {
      // Condition 1 of docs/protocol.md: a shorter lease lets a second claimant send a copy.
      return yield* Effect.dieMessage(
        `delivery lease (${leaseMs} ms) must exceed the write-delay bound (${writeDelayBoundMs} ms)`
      )
    }
    const env: DeliveryEnv = {
      store: yield* TurnIntentStore,
      session: yield* PiSession,
      bookkeeping: yield* AbortBookkeeping,
      token: options.token ?? ownerToken(),
      leaseMs,
      writeDelayBoundMs,
      isDeadOwner: options.isDeadOwner ?? ((token) => isDeadOwner(token)),
      claimRetryMs: options.claimRetryMs ?? 500,
      resolveAttempts: options.resolveAttempts ?? 4,
      naturalInFlight: yield* Ref.make<ReadonlyMap<string, number>>(new Map()),
      nextNatural: yield* Ref.make(1),
      unconfirmed: yield* Ref.make<ReadonlyMap<string, Unconfirmed>>(new Map()),
      crashPoints: Option.getOrElse(yield* Effect.serviceOption(CrashPoints), () => noopCrashPoints),
      composeFallback: Option.match(yield* Effect.serviceOption(FallbackComposer), {
        onNone: () => (intent: TurnIntent) => Effect.succeed(fallbackMessage(intent)),
        onSome: (provided) => provided.compose
      })
    }
    const serial = yield* Effect.makeSemaphore(1)
    const pass = syncPass(env)
    // Named spans with the session (and, for a natural message, the run) as attributes and log
    // annotations: a downstream tracer sees each pass and each delivery.
    const inSession = <A, E, R>(effect: Effect.Effect<A, E, R>, extra: Record<string, string> = {}) =>
      Effect.flatMap(env.session.sessionId, (sessionId) =>
        Effect.zipRight(Effect.annotateCurrentSpan({ sessionId, ...extra }), effect).pipe(
          Effect.annotateLogs({ sessionId, ...extra }),
          Effect.annotateSpans({ sessionId, ...extra })
        )
      )
    const syncFallbacks: CoordinatorService["syncFallbacks"] = Effect.fn("Coordinator.syncFallbacks")(
      (trigger: SyncTrigger) => serial.withPermits(1)(pass(trigger)),
      (effect, trigger) => inSession(effect, { trigger })
    )
    const natural = deliverNatural(env)
    const service: CoordinatorService = {
      deliverNatural: Effect.fn("Coordinator.deliverNatural")(
        (message: NaturalMessage) => natural(message),
        (effect, message) => inSession(effect, { runId: message.runId })
      ),
      syncFallbacks,
      onSettled: Effect.zipRight(env.bookkeeping.clear, syncFallbacks("settled")).pipe(
        Effect.withSpan("Coordinator.onSettled")
      ),
      onSessionStart: syncFallbacks("sessionStart").pipe(Effect.withSpan("Coordinator.onSessionStart"))
    }
    const interval =
      options.syncIntervalMs !== undefined
        ? options.syncIntervalMs
        : policy.syncInterval === null
          ? null
          : toMillis(policy.syncInterval)
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
