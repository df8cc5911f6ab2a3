/**
 * The factual fallback message: built only from an intent's stored facts. It reports what was
 * observed and asks the agent to inspect durable state before deciding whether an authorized
 * correction is needed. It never says that recovery happened, never resumes or retries work,
 * and never calls a handed-off run terminal. Pure.
 */
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import { type TurnIntent, LAUNCH_NODE } from "../domain/turn-intent.ts"
import type { CustomMessage, DeliveryOptions } from "../session/pi-session.ts"

import { DEFERRED_TURN_TYPE } from "../domain/message-types.ts"

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
