/**
 * Fallback synchronization. One pass, in this order (docs/protocol.md maps each step):
 *
 * 1. confirm: resolve this coordinator's sent messages that the branch now shows; keep and renew
 *    the claims of those Pi may still write; release those lost (see `confirmSent`);
 * 2. gates: send nothing while the session is shutting down, a user-interrupted workflow is
 *    held, a turn is running or a system abort is in flight;
 * 3. at session start and on the periodic pass, free claims whose owner process is gone;
 * 4. claim up to CLAIM_BATCH eligible intents; repair those whose message is in the branch;
 *    skip those this coordinator sent and Pi has not written yet (their claim stays);
 * 5. release every other claim before the send (condition 3), then check the gates again,
 *    renew the chosen claim and send at most one fallback (each eligible interruption gets its
 *    own successor turn; the next goes after the next settle or periodic pass);
 * 6. resolve it only if the branch already shows it; otherwise keep the claim (step 1 of a later
 *    pass resolves it).
 *
 * An intent whose run has a natural delivery in progress is left to that delivery.
 */
import { Effect, Either } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { findResolvingMessage } from "./branch-repair.ts"
import type { SyncReport, SyncTrigger } from "./coordinator.ts"
import {
  confirmSent,
  type DeliveryEnv,
  freeDeadOwners,
  hasNaturalInFlight,
  releaseClaim,
  resolveIntent,
  sendClaimed,
  unconfirmedOf
} from "./delivery-env.ts"
import { FALLBACK_DELIVERY } from "./fallback-message.ts"

/** How many eligible intents one pass claims (all but one are released before the send). */
export const CLAIM_BATCH = 16

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
  (trigger: SyncTrigger): Effect.Effect<SyncReport, StoreFailure | InvalidInput> =>
    Effect.gen(function* () {
      const confirmed = yield* confirmSent(env, yield* env.session.isIdle)
      const repaired: string[] = [...confirmed.resolved]
      const blocked = yield* blocker(env)
      if (blocked !== null) return { delivered: [], repaired, failed: [], skipped: blocked }
      // Verified idle: any system abort recorded earlier has nothing left to settle.
      if ((yield* env.bookkeeping.inFlight).length > 0) yield* env.bookkeeping.clear
      const sessionId = yield* env.session.sessionId
      if (trigger !== "settled") yield* freeDeadOwners(env, sessionId)
      const token = `${env.token}:sync`
      const claimed = yield* env.store.claimEligibleForSession({
        targetSessionId: sessionId,
        limit: CLAIM_BATCH,
        token,
        leaseMs: env.leaseMs
      })
      if (claimed[0] !== undefined) yield* env.crashPoints.reached("afterClaim", claimed[0].intentId)
      const branch = yield* env.session.branch
      const failed: string[] = []
      const letGo = (intent: TurnIntent) => releaseClaim(env, intent, token)
      // Step 4: repair, keep what is unconfirmed, and pick the one intent to send.
      let chosen: TurnIntent | null = null
      for (const intent of claimed) {
        if ((yield* unconfirmedOf(env, intent.intentId)) !== undefined) continue
        const match = findResolvingMessage(branch, intent.intentId)
        if (match !== null) {
          const resolved = yield* resolveIntent(env, intent, token, match.resolution)
          if (Either.isRight(resolved)) repaired.push(intent.intentId)
          else yield* letGo(intent)
          continue
        }
        if (chosen !== null || (yield* hasNaturalInFlight(env, intent.runId))) {
          yield* letGo(intent)
          continue
        }
        chosen = intent
      }
      if (chosen === null) return { delivered: [], repaired, failed, skipped: null }
      // The lifecycle can change while this pass runs: check right before the send.
      const skip = yield* blocker(env)
      if (skip !== null) {
        yield* letGo(chosen)
        return { delivered: [], repaired, failed, skipped: skip }
      }
      const message = yield* env.composeFallback(chosen)
      const ids = { intentId: chosen.intentId, runId: chosen.runId }
      const sent = yield* Effect.either(
        sendClaimed(env, chosen, token, "fallback", message, FALLBACK_DELIVERY, blocker(env)).pipe(
          Effect.withSpan("Coordinator.sendFallback", { attributes: ids }),
          Effect.annotateLogs(ids)
        )
      )
      if (Either.isLeft(sent)) {
        failed.push(chosen.intentId)
        yield* Effect.logWarning("fallback send failed; the intent stays eligible", {
          intentId: chosen.intentId,
          error: sent.left.message
        }).pipe(Effect.annotateLogs(ids))
        return { delivered: [], repaired, failed, skipped: null }
      }
      if (sent.right._tag === "ClaimLost") return { delivered: [], repaired, failed, skipped: null }
      if (sent.right._tag === "NotNow") return { delivered: [], repaired, failed, skipped: sent.right.why }
      return { delivered: [chosen.intentId], repaired, failed, skipped: null }
    })
