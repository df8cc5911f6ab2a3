/**
 * Notifier: shows stored notifications to the session that owns them. Each one is marked
 * delivered first and shown second (at most once): a crash between the two loses it rather
 * than showing it twice. Showing is a message sent with `triggerTurn: false` (so it never starts
 * a model turn) and, for progress, the run's one footer line, replaced by each report and
 * cleared by the run's final report. Nothing here reads or writes a turn intent.
 */
import { Context, Effect, Layer } from "effect"
import type { StoreFailure } from "../store/store-errors.ts"
import { PiSession } from "../session/pi-session.ts"
import { NotificationStore } from "../store/notification-store.ts"
import { displayMessage, progressStatus, progressStatusKey } from "./text.ts"

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
