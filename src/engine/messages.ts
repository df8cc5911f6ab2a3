/**
 * What the engine shows in the session: one custom message per agent step, one result
 * presentation per completed run, `ctx.progress` reports through the `StepProgress` port, and
 * the run summaries the `workflow` tool and the `/workflow` command reply with (plain,
 * JSON-ready data).
 *
 * The presentation is built from the workflow's own presenter (or the default) and sent through
 * the Coordinator bound to the run's terminal turn intent, so it is the natural delivery of that
 * intent and never a second terminal message. It is recorded on the run (`presented`) once it
 * reached the session. A send that fails is retried a few times; if it still fails, or another
 * message answered the intent first, nothing is recorded: the intent's fallback (after
 * reconciliation made it eligible) or that other message is the run's terminal turn.
 *
 * StepProgress is an optional port: without it (bare engine tests) a report is checked and then
 * dropped; the app wires it to the notification service (src/notifications/notifications.ts).
 */
import { Context, Duration, Effect, Option, Schedule } from "effect"
import {
  AGENT_STEP_SCHEMA,
  AGENT_STEP_TYPE,
  PRESENTATION_SCHEMA,
  PRESENTATION_TYPE
} from "../domain/message-types.ts"
import { redactText } from "../domain/redact.ts"
import { conditionLabel, runCondition } from "../domain/run-condition.ts"
import { currentDeadline, stepDeadline } from "../domain/step-deadline.ts"
import { clipCodePoints } from "../domain/text.ts"
import type { CoordinatorService } from "../delivery/coordinator.ts"
import type { CustomMessage, DeliveryOptions } from "../session/pi-session.ts"
import type { RunOrigin } from "../domain/event-policy.ts"
import type { RunRecord, RunState, RunStoreService, StepOutcome, StepRecord } from "../store/run-store.ts"
import type { RunError } from "../store/run-end.ts"
import type { WaitRecord } from "../store/run-waits.ts"
import type { NodeResult } from "./definition.ts"
import type { LoadedWorkflow } from "./validate.ts"

/** Both kinds start a model turn after the current one. */
export const DELIVERY: DeliveryOptions = { deliverAs: "followUp", triggerTurn: true }

/** Upper bound of a presentation's text; longer results are clipped. */
export const MAX_PRESENTATION_CHARS = 16_000

export interface AgentStep {
  readonly workflowName: string
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  readonly requestId: string
  readonly prompt: string
}

export const agentStepMessage = (step: AgentStep): CustomMessage => ({
  customType: AGENT_STEP_TYPE,
  display: true,
  content: [
    step.prompt,
    "",
    "---",
    `Workflow "${step.workflowName}" (run ${step.runId}) is waiting for step "${step.nodeId}".`,
    'When you are done, answer with the `workflow` tool: {"action": "submit", ' +
      `"requestId": "${step.requestId}", "output": <your result as JSON>}.`
  ].join("\n"),
  details: {
    schema: AGENT_STEP_SCHEMA,
    runId: step.runId,
    workflowName: step.workflowName,
    nodeId: step.nodeId,
    attemptId: step.attemptId,
    requestId: step.requestId
  }
})

// Redacted before the cut: clipping first could leave a credential's prefix no rule recognises.
const clip = (text: string) => clipCodePoints(redactText(text), MAX_PRESENTATION_CHARS, " …[truncated]")

/** The default presentation text: the result as indented JSON. */
export const defaultPresentation = (workflowName: string, runId: string, result: unknown): string =>
  `Workflow "${workflowName}" (run ${runId}) completed.\nResult:\n${JSON.stringify(result, null, 2) ?? "null"}`

export const presentationMessage = (input: {
  readonly runId: string
  readonly state: string
  readonly text: string
}): CustomMessage => ({
  customType: PRESENTATION_TYPE,
  display: true,
  content: clip(input.text),
  details: { schema: PRESENTATION_SCHEMA, runId: input.runId, state: input.state }
})

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
export const presentRun = Effect.fn("Runner.present")(function* (
  deps: { readonly coordinator: CoordinatorService; readonly store: RunStoreService },
  run: Presentable,
  turnIntentId: string
) {
  yield* Effect.annotateCurrentSpan("runId", run.runId)
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

export interface RunSummary {
  readonly runId: string
  readonly workflowName: string
  readonly workflowRef: string
  readonly revision: number | null
  readonly state: RunState
  readonly origin: RunOrigin
  readonly targetSessionId: string
  /** The node in flight, or the next one to run. */
  readonly currentNodeId: string | null
  /** The attempt in flight (or last interrupted) at that node, if any. */
  readonly currentAttemptId: string | null
  /** The request the model can answer right now, if any. */
  readonly openRequestId: string | null
  /** The open request of the waiting checkpoint the run stands at, if it waits at one. */
  readonly waitRequestId: string | null
  /** Node visits with an outcome so far, and the limit. */
  readonly steps: number
  readonly maxSteps: number
  readonly parkedReason: string | null
  /**
   * What the state means now, in the words people are shown (`running`, `parked (shutdown)`,
   * `held (Escape)`, `orphaned (owner session gone)`, …: domain/run-condition.ts).
   */
  readonly condition: string
  readonly pauseRequested: boolean
  /** Cancellation was asked of a runner in another process; it applies at its next renewal. */
  readonly cancelRequested: "agent" | "user" | null
  /** A runner holds a live lease on the run. */
  readonly claimed: boolean
  /** The run's result, once completed. */
  readonly result?: unknown
  readonly error: RunError | null
  readonly createdAt: string
  readonly startedAt: string | null
  readonly endedAt: string | null
}

export interface StepView {
  readonly seq: number
  readonly nodeId: string
  readonly attemptId: string
  readonly outcome: StepOutcome | null
  readonly output?: unknown
  readonly error: string | null
  /** Why the attempt stopped without an outcome (parked, taken over). */
  readonly interrupted: string | null
  readonly timeoutMs: number | null
  /** The limit counted from when the visit it continues began (ISO), or null without a limit. */
  readonly deadlineAt: string | null
  readonly startedAt: string
  readonly endedAt: string | null
}

export interface RunStatus extends RunSummary {
  readonly stepRecords: ReadonlyArray<StepView>
  /** The deadline of the step in flight (ISO), or null: none in flight, or no limit. */
  readonly deadlineAt: string | null
  /** Durable run events: a lost successor-turn guarantee, a presentation that reached the session. */
  readonly events: ReadonlyArray<{ readonly kind: string; readonly message: string; readonly at: string }>
  /** What the run waits for at a checkpoint, and since when; null when it waits at none. */
  readonly waiting: WaitView | null
}

export interface WaitView {
  readonly requestId: string
  readonly nodeId: string
  readonly prompt: string
  readonly since: string
  readonly deadlineAt: string | null
}

export const waitView = (wait: WaitRecord): WaitView => ({
  requestId: wait.requestId,
  nodeId: wait.nodeId,
  prompt: wait.prompt,
  since: wait.since,
  deadlineAt: isoOrNull(wait.deadlineAt)
})

/** `remindersSent`: step reminders sent for the attempt of the run's open request (0: none known). */
export const summarize = (run: RunRecord, now: number, remindersSent = 0): RunSummary => ({
  runId: run.runId,
  workflowName: run.workflowName,
  workflowRef: run.workflowRef,
  revision: run.revision,
  state: run.state,
  origin: run.origin,
  targetSessionId: run.targetSessionId,
  currentNodeId: run.currentNodeId,
  currentAttemptId: run.currentAttemptId,
  openRequestId: run.openRequestId,
  waitRequestId: run.waitRequestId,
  steps: run.stepCount,
  maxSteps: run.maxSteps,
  parkedReason: run.parkedReason,
  condition: conditionLabel(runCondition(run, now, remindersSent)),
  pauseRequested: run.pauseRequested,
  cancelRequested: run.cancelRequested,
  claimed: run.claimToken !== null && (run.claimExpiresAt ?? 0) > now,
  ...Option.match(run.result, { onNone: () => ({}), onSome: (result) => ({ result }) }),
  error: run.error,
  createdAt: run.createdAt,
  startedAt: run.startedAt,
  endedAt: run.endedAt
})

const isoOrNull = (millis: number | null): string | null =>
  millis === null ? null : new Date(millis).toISOString()

/** A run's steps as the status shows them, each with its deadline (domain/step-deadline.ts). */
export const stepViews = (steps: ReadonlyArray<StepRecord>): ReadonlyArray<StepView> =>
  steps.map((step, index) => ({
    seq: step.seq,
    nodeId: step.nodeId,
    attemptId: step.attemptId,
    outcome: step.outcome,
    ...Option.match(step.output, { onNone: () => ({}), onSome: (output) => ({ output }) }),
    error: step.error,
    interrupted: step.interrupted,
    timeoutMs: step.timeoutMs,
    deadlineAt: isoOrNull(stepDeadline(steps, index)),
    startedAt: step.startedAt,
    endedAt: step.endedAt
  }))

/** The status of a run: its summary, its steps and the deadline still ahead of it. */
export const runStatus = (
  run: RunRecord,
  steps: ReadonlyArray<StepRecord>,
  events: ReadonlyArray<RunStatus["events"][number]>,
  now: number,
  remindersSent = 0,
  wait: WaitRecord | null = null
): RunStatus => ({
  ...summarize(run, now, remindersSent),
  stepRecords: stepViews(steps),
  deadlineAt: isoOrNull(currentDeadline(steps)),
  events,
  waiting: wait === null || wait.state !== "open" ? null : waitView(wait)
})
