/**
 * Every way a run ends goes through `RunStore.settle` (an `End` transition) or `RunStore.cancel`
 * (a run with no live runner). This RunStore decorator writes the run's one `final`
 * notification in the same transaction as the end, so a run never ends without it and never
 * gets two (its ID is derived from the run). A held progress report is stored first, and after
 * the commit the owner session is shown what is pending.
 */
import { createHash } from "node:crypto"
import { Effect, Layer } from "effect"
import { StoreFailure } from "../store/store-errors.ts"
import { Database, immediateAs } from "../store/database.ts"
import { NotificationStore } from "../store/notification-store.ts"
import { isTerminal, type RunRecord, RunStore } from "../store/run-store.ts"
import { Notifications } from "./notifications.ts"
import { finalPayload, Notifier } from "./notifier.ts"

/** Derived from the run, so a retried end cannot store a second `final`. */
export const finalNotificationId = (runId: string) =>
  `final-${createHash("sha256").update(runId).digest("hex")}`

export const layer: Layer.Layer<
  RunStore,
  never,
  RunStore | NotificationStore | Notifications | Notifier | Database
> = Layer.effect(
  RunStore,
  Effect.gen(function* () {
    const inner = yield* RunStore
    const store = yield* NotificationStore
    const notifications = yield* Notifications
    const notifier = yield* Notifier
    const db = yield* Database

    const writeFinal = (run: RunRecord) => {
      const state = run.state
      if (!isTerminal(state)) return Effect.void
      return store
        .insert({
          notificationId: finalNotificationId(run.runId),
          runId: run.runId,
          targetSessionId: run.targetSessionId,
          payload: finalPayload({ ...run, state })
        })
        .pipe(
          Effect.asVoid,
          Effect.catchTag("InvalidInput", (error) =>
            Effect.fail(new StoreFailure({ operation: "finalNotification", message: error.message }))
          )
        )
    }

    /** Run `end` and write the final in one transaction; then show what is pending. */
    const ending = <A, E>(runId: string, end: Effect.Effect<A, E>, endedRun: (a: A) => RunRecord | null) =>
      Effect.gen(function* () {
        yield* notifications.flush(runId)
        const result = yield* immediateAs(
          db,
          "finalNotification"
        )(
          Effect.tap(end, (a) => {
            const run = endedRun(a)
            return run === null ? Effect.void : writeFinal(run)
          })
        )
        if (endedRun(result) !== null) {
          yield* notifier.deliverPending.pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("final notification not shown yet", cause))
          )
        }
        return result
      })

    return RunStore.of({
      ...inner,
      settle: (fence, settlement) =>
        settlement.next._tag === "End"
          ? ending(fence.runId, inner.settle(fence, settlement), (run) => run)
          : inner.settle(fence, settlement),
      cancel: (runId, by) =>
        ending(runId, inner.cancel(runId, by), (result) => (result._tag === "Cancelled" ? result.run : null))
    })
  })
)
