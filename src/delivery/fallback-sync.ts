/**
 * Fallback synchronization: one pass claims the current session's eligible intents, repairs
 * those whose message is already in the branch, and sends at most one factual fallback (each
 * eligible interruption gets its own successor turn; the next one goes after the next settle
 * or periodic pass). A pass sends nothing while the session is shutting down, while a
 * user-interrupted workflow is held, while a turn is running, or while a system abort is in
 * flight. An intent whose run has a natural delivery in progress is left to that delivery.
 */
import { Effect, Either } from "effect"
import type { InvalidInput, StoreFailure } from "../domain/errors.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { findResolvingMessage } from "./branch-repair.ts"
import { reach } from "./crash-points.ts"
import type { SyncReport, SyncTrigger } from "./coordinator.ts"
import {
  alreadySent,
  type DeliveryEnv,
  hasNaturalInFlight,
  releaseClaim,
  resolveIntent,
  resolveSent
} from "./delivery-env.ts"
import { FALLBACK_DELIVERY } from "./fallback-message.ts"

/** How many eligible intents one pass claims (the rest are released right away). */
export const CLAIM_BATCH = 16

const skipped = (why: string): SyncReport => ({ delivered: [], repaired: [], failed: [], skipped: why })

/** Why a fallback may not be sent now, or null when it may. */
const blocker = (env: DeliveryEnv): Effect.Effect<string | null> =>
  Effect.gen(function* () {
    const lifecycle = yield* env.session.lifecycle
    if (lifecycle.shuttingDown) return "shuttingDown"
    if (lifecycle.userHold) return "userHold"
    if (!(yield* env.session.isIdle)) return "busy"
    return null
  })

export const syncPass =
  (env: DeliveryEnv) =>
  (_trigger: SyncTrigger): Effect.Effect<SyncReport, StoreFailure | InvalidInput> =>
    Effect.gen(function* () {
      const blocked = yield* blocker(env)
      if (blocked !== null) return skipped(blocked)
      // Verified idle: any system abort recorded earlier has nothing left to settle.
      if ((yield* env.bookkeeping.inFlight).length > 0) yield* env.bookkeeping.clear
      const token = `${env.token}:sync`
      const claimed = yield* env.store.claimEligibleForSession({
        targetSessionId: yield* env.session.sessionId,
        limit: CLAIM_BATCH,
        token,
        leaseMs: env.leaseMs
      })
      if (claimed[0] !== undefined) yield* reach("afterClaim", claimed[0].intentId)
      const branch = yield* env.session.branch
      const delivered: string[] = []
      const repaired: string[] = []
      const failed: string[] = []
      let skip: string | null = null
      const letGo = (intent: TurnIntent) => releaseClaim(env, intent, token)
      for (const intent of claimed) {
        const sentBefore = yield* alreadySent(env, intent.intentId)
        if (sentBefore !== undefined) {
          // Sent by this coordinator, resolution not stored yet: record it, never send again. On
          // failure the claim is kept, so no other claimant sends a copy while the lease lives.
          const resolved = yield* resolveSent(env, intent, token, sentBefore)
          if (Either.isRight(resolved)) repaired.push(intent.intentId)
          continue
        }
        const match = findResolvingMessage(branch, intent.intentId)
        if (match !== null) {
          const resolved = yield* resolveIntent(env, intent, token, match.resolution)
          if (Either.isRight(resolved)) repaired.push(intent.intentId)
          else yield* letGo(intent)
          continue
        }
        if (delivered.length > 0 || failed.length > 0 || skip !== null) {
          yield* letGo(intent)
          continue
        }
        if (yield* hasNaturalInFlight(env, intent.runId)) {
          yield* letGo(intent)
          continue
        }
        // The lifecycle can change while this pass runs: check right before the send.
        skip = yield* blocker(env)
        if (skip !== null) {
          yield* letGo(intent)
          continue
        }
        const message = yield* env.composeFallback(intent)
        const sent = yield* Effect.either(env.session.send(message, FALLBACK_DELIVERY))
        if (Either.isLeft(sent)) {
          yield* letGo(intent)
          failed.push(intent.intentId)
          yield* Effect.logWarning("fallback send failed; the intent stays eligible", {
            intentId: intent.intentId,
            error: sent.left.message
          })
          continue
        }
        yield* reach("afterSend", intent.intentId)
        const resolved = yield* resolveSent(env, intent, token, "fallback")
        yield* reach("afterResolve", intent.intentId)
        if (Either.isLeft(resolved)) {
          // The message is in the branch: the next pass (same token) repairs the resolution.
          yield* Effect.logWarning("fallback sent but its resolution was not stored", {
            intentId: intent.intentId
          })
        }
        delivered.push(intent.intentId)
      }
      return { delivered, repaired, failed, skipped: skip }
    })
