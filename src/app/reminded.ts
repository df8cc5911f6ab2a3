/**
 * Run views with the step reminders counted. The engine's summaries decide a run's condition
 * without them (the engine does not read reminders); the app's status replies and the live
 * status line add the count of reminders sent for the attempt the run stands at, so a step
 * whose model ended its turn without `submit` reads `waiting for agent (reminder N of 2)`.
 * Without a StepReminderStore (a bare engine) the count is 0.
 */
import { Effect, Option } from "effect"
import { conditionLabel, runCondition } from "../domain/run-condition.ts"
import type { RunSummary } from "../engine/engine.ts"
import { StepReminderStore } from "../store/step-reminder-store.ts"

/** Reminders sent for the attempt `run` stands at (0 without a store, an attempt or a read). */
export const remindersOf = (run: {
  readonly runId: string
  readonly currentAttemptId: string | null
}): Effect.Effect<number> =>
  Effect.flatMap(Effect.serviceOption(StepReminderStore), (store) =>
    Option.isNone(store) || run.currentAttemptId === null
      ? Effect.succeed(0)
      : store.value.countsForRun(run.runId).pipe(
          Effect.map((counts) => counts.get(run.currentAttemptId ?? "") ?? 0),
          Effect.orElseSucceed(() => 0)
        )
  )

/** `summary` with its condition decided again, with the reminders sent counted. */
export const withReminders = <S extends RunSummary>(summary: S, now: number): Effect.Effect<S> =>
  Effect.map(remindersOf(summary), (sent) => {
    if (sent === 0) return summary
    const condition = runCondition(
      {
        ...summary,
        // The summary says whether a live lease held when it was read.
        claimToken: summary.claimed ? "claimed" : null,
        claimExpiresAt: summary.claimed ? now + 1 : null
      },
      now,
      sent
    )
    return { ...summary, condition: conditionLabel(condition) }
  })
