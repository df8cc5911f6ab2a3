/**
 * Step reminders, as pure policy: when a model turn settles while an agent step still awaits its
 * `submit`, the model gets a reminder (at most two per step attempt), then the user one passive
 * notice, then nothing more until the step's own limit. A reminder is never a successor: it is
 * sent only when nothing else owes the model a message (no pending turn intent of the run, no
 * hold, pause, cancel or shutdown), so one settle is answered by at most one of the two.
 *
 * Durability lives elsewhere (each reminder is taken in `workflow_step_reminders` before it is
 * sent; the branch is read too): this module decides from those facts and writes the texts.
 */
import { REMINDER_TYPE, STEP_REMINDER_SCHEMA } from "./message-types.ts"
import { duration } from "./text.ts"

/** Reminders per step attempt; after the last one only the user's notice follows. */
export const MAX_REMINDERS = 2

/** The agent step the settled turn left unanswered, as the runner knows it. */
export interface OpenStep {
  readonly runId: string
  readonly workflowName: string
  readonly nodeId: string
  readonly attemptId: string
  readonly requestId: string
  /** When the step's limit passes (epoch ms); null: no limit. */
  readonly deadline: number | null
}

/** What else is true of the session and the run at this settle. */
export interface ReminderFacts {
  /** The settled turn was aborted (Escape, or our own abort). */
  readonly aborted: boolean
  /** The user holds the workflow (Escape), a pause, cancel or park is asked, or Pi shuts down. */
  readonly stopped: "userHold" | "pause" | "cancel" | "shutdown" | "notRunning" | null
  /** A turn intent of the run is pending or eligible: its message comes first. */
  readonly successorPending: boolean
  /** Our own abort is still settling. */
  readonly abortInFlight: boolean
  /** The step's prompt is in the branch: the model has had a turn with it. */
  readonly promptInBranch: boolean
  /** Ordinals already taken for the attempt (store) or seen in the branch. */
  readonly taken: ReadonlyArray<number>
}

export type ReminderDecision =
  | { readonly _tag: "Remind"; readonly reminder: 1 | 2 }
  /** Both reminders went unanswered: tell the user once, start no turn. */
  | { readonly _tag: "Notice" }
  | {
      readonly _tag: "None"
      readonly why: "aborted" | "stopped" | "successorPending" | "abortInFlight" | "promptNotShown" | "quiet"
    }

export const decideReminder = (facts: ReminderFacts): ReminderDecision => {
  if (facts.aborted) return { _tag: "None", why: "aborted" }
  if (facts.stopped !== null) return { _tag: "None", why: "stopped" }
  if (facts.abortInFlight) return { _tag: "None", why: "abortInFlight" }
  if (facts.successorPending) return { _tag: "None", why: "successorPending" }
  // Settled before its prompt went out (the runner sends it after the settle): not unanswered.
  if (!facts.promptInBranch) return { _tag: "None", why: "promptNotShown" }
  const last = Math.max(0, ...facts.taken)
  if (last === 0) return { _tag: "Remind", reminder: 1 }
  if (last === 1) return { _tag: "Remind", reminder: 2 }
  if (last === MAX_REMINDERS) return { _tag: "Notice" }
  return { _tag: "None", why: "quiet" }
}

/**
 * The step's deadline in words: absolute and remaining (in whole seconds, rounded up, so a
 * fresh 15-minute step says "in 15m"), or that it has none.
 */
export const describeDeadline = (deadline: number | null, now: number): string =>
  deadline === null
    ? "The step has no time limit."
    : deadline <= now
      ? `The step's limit passed at ${new Date(deadline).toISOString()}.`
      : `The step's limit ends at ${new Date(deadline).toISOString()} (in ${duration(Math.ceil((deadline - now) / 1000) * 1000)}).`

/** The exact tool call that answers the step. */
export const submitCall = (requestId: string): string =>
  `{"action": "submit", "requestId": "${requestId}", "output": <your result as JSON>}`

/** The reminder message (content is for the model; details are the public contract). */
export const reminderMessage = (step: OpenStep, reminder: 1 | 2, now: number) => ({
  customType: REMINDER_TYPE,
  display: true,
  content: [
    `Reminder ${reminder} of ${MAX_REMINDERS}: workflow "${step.workflowName}" (run ${step.runId}) is still ` +
      `waiting for step "${step.nodeId}" (request ${step.requestId}). Your last turn ended without submitting it.`,
    `When the step is done, answer with the \`workflow\` tool: ${submitCall(step.requestId)}.`,
    "If you cannot complete it, submit what you have and say what is missing in the output.",
    describeDeadline(step.deadline, now),
    reminder === MAX_REMINDERS ? "This is the last reminder for this step." : ""
  ]
    .filter((line) => line !== "")
    .join("\n"),
  details: {
    schema: STEP_REMINDER_SCHEMA,
    runId: step.runId,
    nodeId: step.nodeId,
    attemptId: step.attemptId,
    requestId: step.requestId,
    reminder
  }
})

/** The user's one passive notice after the second reminder went unanswered. */
export const waitingNotice = (step: OpenStep, now: number): string =>
  `Step "${step.nodeId}" of run ${step.runId} (workflow ${step.workflowName}) is waiting for the agent: ` +
  `${MAX_REMINDERS} reminders went unanswered. ${describeDeadline(step.deadline, now)} ` +
  `/workflow status ${step.runId} shows it; /workflow cancel ${step.runId} stops it.`
