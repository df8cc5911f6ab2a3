/**
 * Custom message types this package sends into Pi sessions and the `workflow` tool's actions: a
 * public contract (renderers, branch scans and users' tools key on them). Dependency-free so any module can import it.
 */
export const DEFERRED_TURN_TYPE = "pi-workflows-deferred-turn"

/** The `workflow` tool's actions: the model-facing contract the schema and the decoder share. */
export const TOOL_ACTIONS = [
  "list",
  "start",
  "status",
  "cancel",
  "submit",
  "progress",
  "restart",
  "answer"
] as const

/**
 * Passive workflow notifications (progress, final): shown to the user, never a turn, and kept
 * out of the model's context.
 */
export const NOTIFICATION_TYPE = "pi-workflows-notification"

/**
 * A hidden message that starts the model's turn for a successor Pi wrote but never answered
 * (killed between the append and the model request). It is never shown and dropped from every
 * model request, so the model answers the original message.
 */
export const TURN_TRIGGER_TYPE = "pi-workflows-turn-trigger"
export const TURN_TRIGGER_SCHEMA = "pi-workflows.turn-trigger.v1"

/**
 * A session entry (extension state, never in the model's context) that the extension writes
 * right before the model request whose newest message is a terminal successor: once it is in the
 * branch, that successor has had its model request and is never triggered again, even when Pi
 * died before the reply was written.
 */
export const SUCCESSOR_REQUESTED_TYPE = "pi-workflows-successor-requested"

/** An agent step's prompt: the model answers it with the `workflow` tool's `submit`. */
export const AGENT_STEP_TYPE = "pi-workflows-agent-step"
export const AGENT_STEP_SCHEMA = "pi-workflows.agent-step.v1"

/**
 * A result presentation: a completed run's (the natural delivery of its terminal turn), or a
 * waiting checkpoint's (`details.state` "waiting", with `requestId`: the `answer` call's).
 */
export const PRESENTATION_TYPE = "pi-workflows-presentation"
export const PRESENTATION_SCHEMA = "pi-workflows.presentation.v1"

/**
 * A step reminder: the model's turn ended while an agent step still awaited its `submit`. At
 * most two per step attempt (`domain/step-reminder.ts`); never a successor of an interruption.
 */
export const REMINDER_TYPE = "pi-workflows-step-reminder"
export const STEP_REMINDER_SCHEMA = "pi-workflows.step-reminder.v1"
