/**
 * StepProgress: where `ctx.progress(text)` of a running node goes. An optional port of the
 * engine: without it (bare engine tests) a report is checked and then dropped; the app wires
 * it to the notification service (src/notifications/notifications.ts).
 */
import { Context, type Effect } from "effect"

export interface StepProgressReport {
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  readonly text: string
}

export interface StepProgressService {
  /** Store (or coalesce) one report; a failure is logged by the caller, never thrown at the node. */
  readonly report: (report: StepProgressReport) => Effect.Effect<void, { readonly message: string }>
}

export class StepProgress extends Context.Tag("pi-workflow-turns/StepProgress")<
  StepProgress,
  StepProgressService
>() {}
