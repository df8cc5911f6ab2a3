/** Run summaries for the `workflow` tool and the `/workflow` command: plain, JSON-ready data. */
import { Option } from "effect"
import type { RunOrigin } from "../domain/event-policy.ts"
import type { RunError, RunRecord, RunState, StepOutcome, StepRecord } from "../store/run-store.ts"

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
  /** The request the model can answer right now, if any. */
  readonly openRequestId: string | null
  /** Node visits with an outcome so far, and the limit. */
  readonly steps: number
  readonly maxSteps: number
  readonly parkedReason: string | null
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
  readonly startedAt: string
  readonly endedAt: string | null
}

export interface RunStatus extends RunSummary {
  readonly stepRecords: ReadonlyArray<StepView>
  /** Durable run events: a lost successor-turn guarantee, a presentation that reached the session. */
  readonly events: ReadonlyArray<{ readonly kind: string; readonly message: string; readonly at: string }>
}

export const summarize = (run: RunRecord, now: number): RunSummary => ({
  runId: run.runId,
  workflowName: run.workflowName,
  workflowRef: run.workflowRef,
  revision: run.revision,
  state: run.state,
  origin: run.origin,
  targetSessionId: run.targetSessionId,
  currentNodeId: run.currentNodeId,
  openRequestId: run.openRequestId,
  steps: run.stepCount,
  maxSteps: run.maxSteps,
  parkedReason: run.parkedReason,
  pauseRequested: run.pauseRequested,
  cancelRequested: run.cancelRequested,
  claimed: run.claimToken !== null && (run.claimExpiresAt ?? 0) > now,
  ...Option.match(run.result, { onNone: () => ({}), onSome: (result) => ({ result }) }),
  error: run.error,
  createdAt: run.createdAt,
  startedAt: run.startedAt,
  endedAt: run.endedAt
})

export const stepView = (step: StepRecord): StepView => ({
  seq: step.seq,
  nodeId: step.nodeId,
  attemptId: step.attemptId,
  outcome: step.outcome,
  ...Option.match(step.output, { onNone: () => ({}), onSome: (output) => ({ output }) }),
  error: step.error,
  interrupted: step.interrupted,
  timeoutMs: step.timeoutMs,
  startedAt: step.startedAt,
  endedAt: step.endedAt
})
