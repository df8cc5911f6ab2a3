/**
 * StepReminderStore: the `workflow_step_reminders` rows, one per step reminder (ordinals 1 and 2)
 * and one for the passive notice that follows an unanswered second reminder (ordinal 3), keyed
 * by the step attempt. A row is taken *before* its message is sent: the first taker wins, so a
 * reminder goes out at most once even across processes and restarts (a crash between the take
 * and the send loses that one reminder rather than sending it twice). This module is the
 * contract; `step-reminder-store-sql.ts` implements it on both backends.
 */
import { Context, type Effect } from "effect"
import type { InvalidInput } from "../domain/errors.ts"
import type { StoreFailure } from "./store-errors.ts"

/** 1 and 2: the reminders of one step attempt; 3: the user's passive notice after the second. */
export type ReminderOrdinal = 1 | 2 | 3

export interface StepReminderRecord {
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  readonly requestId: string
  /** The session the message went to. */
  readonly sessionId: string
  readonly ordinal: ReminderOrdinal
  readonly createdAt: string
}

export type TakeReminder = Omit<StepReminderRecord, "createdAt">

export interface StepReminderStoreService {
  /** Take `ordinal` of the attempt (`created_at = now`); false when it was taken already. */
  readonly take: (input: TakeReminder) => Effect.Effect<boolean, InvalidInput | StoreFailure>
  /** What was taken for one attempt, by ordinal. */
  readonly forAttempt: (attemptId: string) => Effect.Effect<ReadonlyArray<StepReminderRecord>, StoreFailure>
  /** Reminders (ordinals 1–2) taken per attempt of a run, for status views. */
  readonly countsForRun: (runId: string) => Effect.Effect<ReadonlyMap<string, number>, StoreFailure>
}

export class StepReminderStore extends Context.Tag("pi-workflow-turns/StepReminderStore")<
  StepReminderStore,
  StepReminderStoreService
>() {}
