/**
 * A completed run's result presentation: built from the workflow's own presenter (or the
 * default), sent through the Coordinator, and recorded on the run (`presented`) once it reached
 * the session. A send that fails is retried a few times; if it still fails, nothing is recorded
 * and reconciliation presents the run again (the Coordinator's branch check keeps it to one
 * copy in the session).
 */
import { Duration, Effect, Schedule } from "effect"
import type { NodeResult } from "./definition.ts"
import { WRITE_DELAY_BOUND_MS } from "../delivery/protocol.ts"
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

/**
 * How long after a run completed a periodic reconciliation pass may present it: the runner that
 * completed it presents it itself, so only a presentation still missing after twice the
 * write-delay bound is sent by another pass.
 */
export const PRESENTATION_GRACE_MS = 2 * WRITE_DELAY_BOUND_MS

/** Present and record it; true once the presentation is in the session. Never fails. */
export const presentRun = (
  deps: Pick<RunnerDeps, "coordinator" | "store">,
  run: Presentable
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const text = yield* presentationText(run)
    const message = presentationMessage({ runId: run.runId, state: "completed", text })
    const sent = yield* deps.coordinator
      .deliverNatural({ kind: "presentation", runId: run.runId, message, options: DELIVERY })
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
    yield* deps.store.recordEvent(run.runId, { kind: "presented", message: "presentation sent" }).pipe(
      Effect.retry({ schedule: Schedule.exponential(Duration.millis(100)), times: 3 }),
      // The message is in the branch: a later pass finds it there and records nothing twice.
      Effect.catchAll((error) =>
        Effect.logWarning(`workflow run ${run.runId}: presentation not recorded: ${error.message}`)
      )
    )
    return true
  })
