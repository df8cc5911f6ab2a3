/**
 * A completed run's result presentation: built from the workflow's own presenter (or the
 * default) and sent through the Coordinator bound to the run's terminal turn intent, so it is
 * the natural delivery of that intent and never a second terminal message. Recorded on the run
 * (`presented`) once it reached the session. A send that fails is retried a few times; if it
 * still fails, or another message answered the intent first, nothing is recorded: the intent's
 * fallback (after reconciliation made it eligible) or that other message is the run's terminal
 * turn.
 */
import { Duration, Effect, Schedule } from "effect"
import type { NodeResult } from "./definition.ts"
import { defaultPresentation, DELIVERY, presentationMessage } from "./messages.ts"
import type { RunnerDeps } from "./active-run.ts"
import type { LoadedWorkflow } from "./validate.ts"

export interface Presentable {
  readonly runId: string
  readonly workflow: Pick<LoadedWorkflow, "name" | "presentation">
  readonly input: unknown
  readonly outputs: Readonly<Record<string, unknown>>
  readonly results: Readonly<Record<string, NodeResult>>
  readonly result: unknown
}

/** Sends that failed are retried this often before reconciliation takes over. */
export const PRESENT_ATTEMPTS = 4

export const presentationText = (run: Presentable) =>
  Effect.gen(function* () {
    const custom = run.workflow.presentation
    if (custom === null) return defaultPresentation(run.workflow.name, run.runId, run.result)
    return yield* Effect.tryPromise(async () =>
      custom({ input: run.input, outputs: run.outputs, results: run.results, result: run.result })
    ).pipe(
      Effect.map((value) => (typeof value === "string" && value.length > 0 ? value : null)),
      Effect.orElseSucceed(() => null),
      Effect.map((value) => value ?? defaultPresentation(run.workflow.name, run.runId, run.result))
    )
  })

/** Present it through its terminal turn intent and record it; true once it is in the session. Never fails. */
export const presentRun = (
  deps: Pick<RunnerDeps, "coordinator" | "store">,
  run: Presentable,
  turnIntentId: string
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const text = yield* presentationText(run)
    const message = presentationMessage({ runId: run.runId, state: "completed", text })
    const sent = yield* deps.coordinator
      .deliverNatural({ kind: "presentation", runId: run.runId, message, options: DELIVERY, turnIntentId })
      .pipe(
        Effect.retry({ schedule: Schedule.exponential(Duration.millis(100)), times: PRESENT_ATTEMPTS - 1 }),
        Effect.either
      )
    if (sent._tag === "Left") {
      yield* Effect.logWarning(
        `workflow run ${run.runId}: presentation not delivered (${sent.left.message}); reconciliation retries`
      )
      return false
    }
    if (!sent.right.sent && sent.right.turnIntentId === null) {
      yield* Effect.logInfo(`workflow run ${run.runId}: presentation not sent: ${sent.right.note ?? "?"}`)
      return false
    }
    yield* deps.store.recordEvent(run.runId, { kind: "presented", message: "presentation sent" }).pipe(
      Effect.retry({ schedule: Schedule.exponential(Duration.millis(100)), times: 3 }),
      // The message is in the branch: a later pass finds it there and records nothing twice.
      Effect.catchAll((error) =>
        Effect.logWarning(`workflow run ${run.runId}: presentation not recorded: ${error.message}`)
      )
    )
    return true
  })
