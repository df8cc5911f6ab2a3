/**
 * Fallbacks: the factual fallback message and fallback synchronization, the pass that sends it.
 *
 * The factual fallback message is built only from an intent's stored facts. It reports what was
 * observed and asks the agent to inspect durable state before deciding whether an authorized
 * correction is needed. It never says that recovery happened, never resumes or retries work,
 * and never calls a handed-off run terminal.
 *
 * Fallback synchronization: one pass, in this order (docs/protocol.md maps each step):
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
import { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import { LAUNCH_NODE, type TurnIntent } from "../domain/turn-intent.ts"
import type { CustomMessage, DeliveryOptions } from "../session/pi-session.ts"
import type { StoreFailure } from "../store/store-errors.ts"
import type { SyncReport, SyncTrigger } from "./coordinator.ts"
import {
  confirmSent,
  type DeliveryEnv,
  findResolvingMessage,
  hasNaturalInFlight,
  releaseClaim,
  resolveIntent,
  sendClaimed,
  unconfirmedOf
} from "./protocol.ts"

export const DEFERRED_TURN_MESSAGE_SCHEMA = "pi-workflows.deferred-turn-message.v1"

/** A fallback starts exactly one turn after the current one, never inside it. */
export const FALLBACK_DELIVERY: DeliveryOptions = { deliverAs: "followUp", triggerTurn: true }

/** States that mean the run itself ended (as opposed to a stopped turn or a handoff). */
const TERMINAL_STATES = new Set(["cancelled", "timed_out", "failed", "completed"])

const CAUSE_TEXT: Record<TurnIntent["cause"], string> = {
  agentCancelled: "the agent cancelled the workflow while its turn was active",
  timedOut: "a workflow step reached its time limit",
  failed: "the workflow failed",
  launchFailed: "the queued workflow launch could not be activated",
  controllerInterrupted: "the workflow controller stopped the active workflow turn",
  claimLost: "this session lost its claim on the run; ownership moved to another runner",
  completed: "the workflow completed, and its result presentation never reached this session"
}

const MAX_DETAIL_FIELD = 200

// In characters (code points), redacted first: a cut never halves a surrogate pair or a secret.
const clip = (text: string) => clipCodePoints(redactText(text), MAX_DETAIL_FIELD)

export interface FallbackDetails {
  readonly schema: typeof DEFERRED_TURN_MESSAGE_SCHEMA
  readonly turnIntentId: string
  readonly runId: string
  readonly cause: string
  /** Small presentation fields for the TUI card. */
  readonly workflowName: string
  readonly observedState: string
}

export const fallbackDetails = (intent: TurnIntent): FallbackDetails => ({
  schema: DEFERRED_TURN_MESSAGE_SCHEMA,
  turnIntentId: intent.intentId,
  runId: intent.runId,
  cause: intent.cause,
  workflowName: clip(intent.facts.workflowName),
  observedState: clip(intent.facts.observedState)
})

/** What the observed state says about the run, in words that never overstate it. */
const statusLine = (intent: TurnIntent): string => {
  const { facts } = intent
  if (facts.handoff) {
    return (
      "The run was handed off: another runner may continue it. This message does not mean the run " +
      "has ended, and this session should not continue its work."
    )
  }
  if (TERMINAL_STATES.has(facts.observedState)) {
    return `The run is recorded as ${facts.observedState}. Your previous turn ended before it could react to this.`
  }
  return `The last observed state is "${facts.observedState}". Your previous turn was stopped before it could react to this.`
}

export const fallbackContent = (intent: TurnIntent): string => {
  const { facts } = intent
  const lines = [
    "Workflow turn notice from Pi Workflows.",
    "",
    `What happened: ${CAUSE_TEXT[intent.cause]}.`,
    "Observed facts:",
    `- workflow: ${facts.workflowName}`,
    `- run: ${facts.runId}`,
    `- observed state: ${facts.observedState}`,
    `- cause: ${facts.cause}`
  ]
  if (facts.nodeId !== null) {
    lines.push(
      `- node: ${facts.nodeId === LAUNCH_NODE ? `${LAUNCH_NODE} (before any node ran)` : facts.nodeId}`
    )
  }
  if (facts.attemptId !== null) lines.push(`- attempt: ${facts.attemptId}`)
  if (facts.reason !== null) lines.push(`- reason: ${facts.reason}`)
  lines.push(
    "",
    statusLine(intent),
    "Pi Workflows took no corrective action on its own, and this notice does not restart the run or " +
      "grant permission for new work.",
    `Inspect the run's durable state first (the \`workflow\` tool with {"action": "status", "runId": "${facts.runId}"}), then decide ` +
      "whether a correction is needed and whether you are authorized to make it."
  )
  return lines.join("\n")
}

export const fallbackMessage = (intent: TurnIntent): CustomMessage => ({
  customType: DEFERRED_TURN_TYPE,
  content: fallbackContent(intent),
  display: true,
  details: { ...fallbackDetails(intent) }
})

// Fallback synchronization (the steps are in the module comment).

/**
 * Free the claims of this session's pending intents whose owner process is gone (`isDeadOwner`
 * in `coordinator-live.ts`), so a restarted Pi delivers them at once instead of after the lease. The release names the dead
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
          // In the trace where the intent began (its interruption), linked to this pass.
          env.traces.withIntentSpan("Coordinator.sendFallback", chosen.intentId, ids),
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
