/**
 * The custom messages the engine hands to the Coordinator: one per agent step and one result
 * presentation per completed run. Pure builders; the Coordinator adds `turnIntentId` when the
 * message resolves a pending intent.
 */
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { DeliveryOptions, CustomMessage } from "../session/pi-session.ts"

export const AGENT_STEP_TYPE = "pi-workflows-agent-step"
export const AGENT_STEP_SCHEMA = "pi-workflows.agent-step.v1"
export const PRESENTATION_TYPE = "pi-workflows-presentation"
export const PRESENTATION_SCHEMA = "pi-workflows.presentation.v1"

/** Both kinds start a model turn after the current one. */
export const DELIVERY: DeliveryOptions = { deliverAs: "followUp", triggerTurn: true }

/** Upper bound of a presentation's text; longer results are clipped. */
export const MAX_PRESENTATION_CHARS = 16_000

export interface AgentStep {
  readonly workflowName: string
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  readonly requestId: string
  readonly prompt: string
}

export const agentStepMessage = (step: AgentStep): CustomMessage => ({
  customType: AGENT_STEP_TYPE,
  display: true,
  content: [
    step.prompt,
    "",
    "---",
    `Workflow "${step.workflowName}" (run ${step.runId}) is waiting for step "${step.nodeId}".`,
    'When you are done, answer with the `workflow` tool: {"action": "submit", ' +
      `"requestId": "${step.requestId}", "output": <your result as JSON>}.`
  ].join("\n"),
  details: {
    schema: AGENT_STEP_SCHEMA,
    runId: step.runId,
    workflowName: step.workflowName,
    nodeId: step.nodeId,
    attemptId: step.attemptId,
    requestId: step.requestId
  }
})

// Redacted before the cut: clipping first could leave a credential's prefix no rule recognises.
const clip = (text: string) => clipCodePoints(redactText(text), MAX_PRESENTATION_CHARS, " …[truncated]")

/** The default presentation text: the result as indented JSON. */
export const defaultPresentation = (workflowName: string, runId: string, result: unknown): string =>
  `Workflow "${workflowName}" (run ${runId}) completed.\nResult:\n${JSON.stringify(result, null, 2) ?? "null"}`

export const presentationMessage = (input: {
  readonly runId: string
  readonly state: string
  readonly text: string
}): CustomMessage => ({
  customType: PRESENTATION_TYPE,
  display: true,
  content: clip(input.text),
  details: { schema: PRESENTATION_SCHEMA, runId: input.runId, state: input.state }
})
