/**
 * Pure rules for passive notifications: what a valid progress report is, the one-line summary
 * of a run's end, and the display-only message a notification becomes. No I/O.
 */
import { NOTIFICATION_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { CustomMessage } from "../session/pi-session.ts"
import {
  type FinalPayload,
  MAX_PROGRESS_BYTES,
  NOTIFICATION_SCHEMA,
  type Notification
} from "../store/notification-store.ts"
import type { RunRecord, TerminalRunState } from "../store/run-store.ts"

const MAX_SUMMARY = 300

/** Why a progress text is refused, or null when it is fine. */
export const progressProblem = (text: unknown): string | null => {
  if (typeof text !== "string") return "progress text must be a string"
  if (text.trim().length === 0) return "progress text must not be empty"
  const bytes = Buffer.byteLength(text, "utf8")
  if (bytes > MAX_PROGRESS_BYTES) {
    return `progress text is ${bytes} bytes; the limit is ${MAX_PROGRESS_BYTES} bytes (2 KiB)`
  }
  return null
}

/**
 * Redact, collapse whitespace (newlines included) and clip to `max` characters (code points),
 * so a summary is always one short line; redacting first keeps a cut from hiding a secret.
 */
export const oneLine = (text: string, max = MAX_SUMMARY): string =>
  clipCodePoints(redactText(text).replace(/\s+/g, " ").trim(), max)

/** The `final` payload of a run that just ended: its state and a one-line summary. */
export const finalPayload = (run: RunRecord & { readonly state: TerminalRunState }): FinalPayload => {
  const steps = `${run.stepCount} step${run.stepCount === 1 ? "" : "s"}`
  const why = run.error === null ? null : run.error.message
  const summary =
    run.state === "completed"
      ? `completed after ${steps}`
      : `${run.state.replace("_", " ")} after ${steps}${why === null ? "" : `: ${why}`}`
  return {
    schema: NOTIFICATION_SCHEMA,
    kind: "final",
    workflowName: run.workflowName,
    state: run.state,
    summary: oneLine(summary)
  }
}

/**
 * The message a notification is recorded as in the session. It is sent without a turn and kept
 * out of the model's context by the extension, so the model never reads it. A final report is
 * displayed in the conversation; a progress report is not (the footer line `progressStatus`
 * shows the latest one per run, so reports do not pile up in the conversation).
 */
export const displayMessage = (notification: Notification): CustomMessage => {
  const payload = notification.payload
  const head = `Workflow ${payload.workflowName} (run ${notification.runId})`
  const content = payload.kind === "progress" ? `${head}: ${payload.text}` : `${head} ${payload.summary}`
  return {
    customType: NOTIFICATION_TYPE,
    content,
    display: payload.kind === "final",
    details: {
      schema: NOTIFICATION_SCHEMA,
      notificationId: notification.notificationId,
      runId: notification.runId,
      kind: payload.kind,
      ...(payload.kind === "final" ? { state: payload.state } : {})
    }
  }
}

/** The footer key of a run's progress line: one line per run, replaced by each report. */
export const progressStatusKey = (runId: string): string => `pi-workflows:${runId}`

/** The footer line for a progress report, or undefined (clear it) when the run has ended. */
export const progressStatus = (notification: Notification): string | undefined =>
  notification.payload.kind === "progress"
    ? `… ${notification.payload.workflowName} (run ${notification.runId}): ${oneLine(notification.payload.text)}`
    : undefined
