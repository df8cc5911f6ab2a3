/**
 * Notifier: shows stored notifications to the session that owns them. Each one is marked
 * delivered first and shown second (at most once): a crash between the two loses it rather
 * than showing it twice. Showing is a message sent with `triggerTurn: false` (so it never starts
 * a model turn) and, for progress, the run's one footer line, replaced by each report and
 * cleared by the run's final report. Nothing here reads or writes a turn intent.
 *
 * The pure text rules of passive notifications are here too: what a valid progress report is,
 * the one-line summary of a run's end, and the display-only message a notification becomes.
 */
import { Context, Effect, Layer } from "effect"
import { NOTIFICATION_TYPE } from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { clipCodePoints } from "../domain/text.ts"
import { type CustomMessage, PiSession } from "../session/pi-session.ts"
import {
  type FinalPayload,
  MAX_PROGRESS_BYTES,
  NOTIFICATION_SCHEMA,
  type Notification,
  NotificationStore
} from "../store/notification-store.ts"
import type { RunRecord, TerminalRunState } from "../store/run-store.ts"
import type { StoreFailure } from "../store/store-errors.ts"

const BATCH = 50

export interface NotifierService {
  /**
   * Show every pending notification of the current session, oldest first; the number shown.
   * Other sessions' notifications stay pending for their owner. While Pi shuts down nothing is
   * taken, so the next start shows them.
   */
  readonly deliverPending: Effect.Effect<number, StoreFailure>
}

export class Notifier extends Context.Tag("pi-workflow-turns/Notifier")<Notifier, NotifierService>() {}

export const make = Effect.gen(function* () {
  const store = yield* NotificationStore
  const session = yield* PiSession
  // One deliverer at a time keeps the shown order equal to the stored order.
  const lock = yield* Effect.makeSemaphore(1)

  /** Take a batch and show it; uninterruptible, so an interruption never falls between the two. */
  const batch = Effect.uninterruptible(
    Effect.gen(function* () {
      const targetSessionId = yield* session.sessionId
      const taken = yield* store
        .takePending({ targetSessionId, limit: BATCH })
        .pipe(Effect.catchTag("InvalidInput", () => Effect.succeed([])))
      let shown = 0
      for (const notification of taken) {
        yield* session.send(displayMessage(notification), { deliverAs: "followUp", triggerTurn: false }).pipe(
          Effect.zipRight(
            session.showStatus(progressStatusKey(notification.runId), progressStatus(notification))
          ),
          Effect.zipRight(Effect.sync(() => shown++)),
          Effect.catchTag("SendFailed", (error) =>
            Effect.logWarning(
              `notification ${notification.notificationId} was marked delivered but Pi refused it: ${error.message}`
            )
          )
        )
      }
      return { taken: taken.length, shown }
    })
  )

  const deliverPending: NotifierService["deliverPending"] = lock.withPermits(1)(
    Effect.gen(function* () {
      let shown = 0
      while (true) {
        if ((yield* session.lifecycle).shuttingDown) return shown
        const result = yield* batch
        shown += result.shown
        if (result.taken < BATCH) return shown
      }
    })
  )

  return Notifier.of({ deliverPending })
})

export const layer: Layer.Layer<Notifier, never, NotificationStore | PiSession> = Layer.effect(Notifier, make)

// The text rules (pure).

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
