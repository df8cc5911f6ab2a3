/**
 * What natural delivery and fallback sync share inside one coordinator, and the one way both
 * send: renew the claim, send, and resolve only what the branch shows (docs/protocol.md).
 */
import { Clock, Duration, Effect, Either, Ref, Schedule } from "effect"
import type { ClaimNotHeld, IntentNotFound, InvalidInput } from "../domain/errors.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import { resolutionMessageId } from "../domain/identity.ts"
import type { Resolution, TurnIntent } from "../domain/turn-intent.ts"
import { describeError } from "../interruption/describe-failure.ts"
import type { AbortBookkeepingService } from "../interruption/abort-bookkeeping.ts"
import type { CustomMessage, DeliveryOptions, PiSessionService, SendFailed } from "../session/pi-session.ts"
import type { TurnIntentStoreService } from "../store/turn-intent-store.ts"
import { findResolvingMessage } from "./branch-repair.ts"
import type { CrashPointsService } from "./crash-points.ts"

/** A message this coordinator sent whose intent is not resolved yet; its claim is kept. */
export interface Unconfirmed {
  readonly intent: TurnIntent
  /** The claim token that sent it, and that keeps the claim while the message is unconfirmed. */
  readonly token: string
  readonly resolution: Resolution
  /** Clock time of the send. */
  readonly sentAt: number
}

export interface DeliveryEnv {
  readonly store: TurnIntentStoreService
  readonly session: PiSessionService
  readonly bookkeeping: AbortBookkeepingService
  /** This coordinator's claimant prefix; each natural delivery and the sync get their own token. */
  readonly token: string
  readonly leaseMs: number
  /** Condition 1 (protocol.ts): after this long on an idle session, an unwritten message is lost. */
  readonly writeDelayBoundMs: number
  readonly claimRetryMs: number
  readonly resolveAttempts: number
  /** True when a claim token names an owner process that is gone (owner.ts). */
  readonly isDeadOwner: (token: string) => boolean
  /** Runs with a natural delivery in progress, with how many. */
  readonly naturalInFlight: Ref.Ref<ReadonlyMap<string, number>>
  readonly nextNatural: Ref.Ref<number>
  /**
   * Messages sent but not yet resolved, by intent ID. Pi writes a message some time after `send`
   * returns (after the settle handlers return, when the turn starts), so the intent is resolved
   * only once the branch shows it; until then the claim is kept and renewed, and nothing sends
   * the intent again. A crash drops this memory and the claim runs out (or its dead owner is
   * recognised): the next claimant finds the message in the branch or sends it again.
   */
  readonly unconfirmed: Ref.Ref<ReadonlyMap<string, Unconfirmed>>
  /**
   * Test-only crash points (crash-points.ts), taken from the layer's context when it is built,
   * so they do not depend on the context of whoever calls the coordinator; the no-op otherwise.
   */
  readonly crashPoints: CrashPointsService
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
  resolution: Resolution,
  /** Another intent's message that answers this one too (see `sibling-intents.ts`). */
  messageId: string = resolutionMessageId(intent.intentId, resolution)
): Effect.Effect<Either.Either<TurnIntent, ResolveError>> =>
  env.store.resolve({ intentId: intent.intentId, token, resolution, messageId }).pipe(
    Effect.retry({
      schedule: Schedule.exponential(Duration.millis(20)),
      times: Math.max(0, env.resolveAttempts - 1),
      while: (error) => error._tag === "StoreFailure"
    }),
    Effect.either
  )

/** The unconfirmed send of this intent by this coordinator, if any. */
export const unconfirmedOf = (env: DeliveryEnv, intentId: string): Effect.Effect<Unconfirmed | undefined> =>
  Effect.map(Ref.get(env.unconfirmed), (sent) => sent.get(intentId))

const forget = (env: DeliveryEnv, intentId: string) =>
  Ref.update(env.unconfirmed, (sent) => {
    const next = new Map(sent)
    next.delete(intentId)
    return next
  })

const remember = (env: DeliveryEnv, entry: Unconfirmed) =>
  Ref.update(env.unconfirmed, (sent) => new Map(sent).set(entry.intent.intentId, entry))

/** Give a claim back; a failure only means the lease expires on its own. */
export const releaseClaim = (env: DeliveryEnv, intent: TurnIntent, token: string): Effect.Effect<void> =>
  env.store.release({ intentId: intent.intentId, token }).pipe(Effect.ignore)

/** Extend a held claim; false when it is no longer held or the store cannot say. */
export const renewClaim = (env: DeliveryEnv, intentId: string, token: string): Effect.Effect<boolean> =>
  env.store.renew({ intentId, token, leaseMs: env.leaseMs }).pipe(Effect.orElseSucceed(() => false))

export type SendOutcome =
  /** Sent, seen in the branch and resolved. */
  | { readonly _tag: "Resolved" }
  /** Sent; resolved later, once the branch shows it (or the store takes it). */
  | { readonly _tag: "Unconfirmed"; readonly note: string | null }
  /** The claim was no longer held at the renewal: nothing was sent. */
  | { readonly _tag: "ClaimLost" }
  /**
   * Nothing was sent and the claim was released: the gate closed (the session got busy, an
   * abort started, shutdown or hold) or the renewal took so long that too little lease was left
   * to cover Pi's write (condition 1).
   */
  | { readonly _tag: "NotNow"; readonly why: string }

/**
 * Send an intent's message under its claim: renew the claim right before the send (condition
 * 2), send, and resolve only if the branch already shows the message. Otherwise the message is
 * remembered as unconfirmed with its claim kept; `confirmSent` resolves it later. Nothing slow
 * runs after the send (condition 3): a send from a settle handler is written only after the
 * handler returns.
 */
export const sendClaimed = (
  env: DeliveryEnv,
  intent: TurnIntent,
  token: string,
  resolution: Resolution,
  message: CustomMessage,
  options: DeliveryOptions,
  /** Why the message may not go out now (checked after the renewal, right before the send). */
  gate: Effect.Effect<string | null>
): Effect.Effect<SendOutcome, SendFailed> =>
  Effect.gen(function* () {
    const before = yield* Clock.currentTimeMillis
    if (!(yield* renewClaim(env, intent.intentId, token))) return { _tag: "ClaimLost" }
    // The renewal took effect at some moment after `before`: the lease lasts at least until
    // before + leaseMs, and it must still cover Pi's write delay when the send goes out.
    const slow = (yield* Clock.currentTimeMillis) - before >= env.leaseMs - env.writeDelayBoundMs
    const why = slow ? "slowRenewal" : yield* gate
    if (why !== null) {
      yield* releaseClaim(env, intent, token)
      return { _tag: "NotNow", why }
    }
    const sent = yield* Effect.either(env.session.send(message, options))
    if (Either.isLeft(sent)) {
      yield* releaseClaim(env, intent, token)
      return yield* Effect.fail(sent.left)
    }
    const sentAt = yield* Clock.currentTimeMillis
    yield* remember(env, { intent, token, resolution, sentAt })
    yield* env.crashPoints.reached("afterSend", intent.intentId)
    if (findResolvingMessage(yield* env.session.branch, intent.intentId) === null) {
      return { _tag: "Unconfirmed", note: null }
    }
    const resolved = yield* resolveIntent(env, intent, token, resolution)
    yield* env.crashPoints.reached("afterResolve", intent.intentId)
    if (Either.isRight(resolved)) {
      yield* forget(env, intent.intentId)
      return { _tag: "Resolved" }
    }
    // In the branch, but the store refused: the claim is kept (renewed by later passes) and the
    // next pass, or any later claimant, records it from the branch.
    return {
      _tag: "Unconfirmed",
      note: `sent; resolution not stored (${describeError(resolved.left)}), branch repair will record it`
    }
  })

export interface ConfirmReport {
  readonly resolved: ReadonlyArray<string>
  /** Unconfirmed past the write-delay bound on an idle session: lost, claim released. */
  readonly lost: ReadonlyArray<string>
}

/**
 * The confirmation step of every pass, for this coordinator's unconfirmed sends: resolve those
 * the branch shows; keep and renew the claim of those Pi may still write; give up (release the
 * claim, so the intent can be sent again) on those still missing after the write-delay bound
 * while the session is idle. An entry whose claim another claimant took is forgotten: that
 * claimant checks the branch before it sends.
 */
export const confirmSent = (env: DeliveryEnv, idle: boolean): Effect.Effect<ConfirmReport> =>
  Effect.gen(function* () {
    const entries = [...(yield* Ref.get(env.unconfirmed)).values()]
    const resolved: string[] = []
    const lost: string[] = []
    if (entries.length === 0) return { resolved, lost }
    const branch = yield* env.session.branch
    for (const entry of entries) {
      const { intent, token } = entry
      if (findResolvingMessage(branch, intent.intentId) !== null) {
        const done = yield* resolveIntent(env, intent, token, entry.resolution)
        if (Either.isRight(done)) {
          yield* forget(env, intent.intentId)
          resolved.push(intent.intentId)
          yield* env.crashPoints.reached("afterResolve", intent.intentId)
        } else if (done.left._tag !== "StoreFailure") {
          // Resolved by another claimant, or the claim is gone: nothing more to do here.
          yield* forget(env, intent.intentId)
        } else yield* renewClaim(env, intent.intentId, token)
        continue
      }
      const now = yield* Clock.currentTimeMillis
      if (idle && now - entry.sentAt > env.writeDelayBoundMs) {
        yield* forget(env, intent.intentId)
        yield* releaseClaim(env, intent, token)
        lost.push(intent.intentId)
        yield* Effect.logWarning("a sent message never reached the branch; the intent is open again", {
          intentId: intent.intentId
        })
        continue
      }
      if (!(yield* renewClaim(env, intent.intentId, token))) {
        // Only a store that refused renewals for a whole lease gets here (docs/protocol.md).
        const row = yield* Effect.either(env.store.get(intent.intentId))
        const taken =
          Either.isRight(row) && (row.right._tag === "None" || row.right.value.deliveryClaimToken !== token)
        if (taken) yield* forget(env, intent.intentId)
      }
    }
    return { resolved, lost }
  })

export const hasNaturalInFlight = (env: DeliveryEnv, runId: string): Effect.Effect<boolean> =>
  Effect.map(Ref.get(env.naturalInFlight), (runs) => (runs.get(runId) ?? 0) > 0)

/**
 * Free the claims of this session's pending intents whose owner process is gone (owner.ts), so a
 * restarted Pi delivers them at once instead of after the lease. The release names the dead
 * owner's token, so it changes nothing once anyone else has claimed the intent.
 */
export const freeDeadOwners = (
  env: DeliveryEnv,
  sessionId: string
): Effect.Effect<number, StoreFailure | InvalidInput> =>
  Effect.gen(function* () {
    const pending = yield* env.store.list({ targetSessionId: sessionId, state: "pending", limit: 1_000 })
    let freed = 0
    for (const intent of pending) {
      const holder = intent.deliveryClaimToken
      if (holder === null || !env.isDeadOwner(holder)) continue
      if (yield* env.store.release({ intentId: intent.intentId, token: holder })) freed++
    }
    return freed
  })
