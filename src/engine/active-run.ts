/**
 * The in-memory side of a run this process is executing: its claim, its control signals and
 * what the runner knows about the visit in flight. Durable state lives in the RunStore; this
 * is what must survive only as long as the runner fiber does.
 */
import { randomUUID } from "node:crypto"
import { type Deferred, Effect, Option, type Ref, type Schedule } from "effect"
import type { QuietKind, Provenance, RunRef } from "../domain/event-policy.ts"
import type { CoordinatorService } from "../delivery/coordinator.ts"
import type { SourceEventsService } from "../interruption/source-events.ts"
import type { Fence, RunRecord, RunStoreService, StepRecord } from "../store/run-store.ts"
import type { NodeResult, VisitRecord } from "./definition.ts"
import type { StepProgressService } from "./progress.ts"
import type { LoadedNode, LoadedWorkflow } from "./validate.ts"

/** Why a runner must stop its current visit now. The first request wins. */
export type StopRequest =
  | { readonly _tag: "Cancel"; readonly by: "agent" | "user" }
  | { readonly _tag: "Park"; readonly reason: string; readonly quiet: QuietKind | null }
  | { readonly _tag: "Interrupt"; readonly reason: string; readonly afterwards: "park" | "fail" }
  | { readonly _tag: "ClaimLost" }

export interface VisitState {
  readonly nodeId: string
  readonly attemptId: string
  readonly node: LoadedNode
  /** Completed with the output once a submission is durably accepted. */
  readonly submitted: Deferred.Deferred<unknown>
  /** Set once the request row exists. */
  readonly requestId: string | null
  /** The prompt reached the coordinator: an agent turn is working on this request. */
  readonly delivered: boolean
  /** The resolved limit (undefined until resolved). */
  readonly timeoutMs: number | null | undefined
  /**
   * When the limit started counting (epoch ms): set when this visit continues one a dead or
   * expired owner left in flight (`step-deadline.ts`); null means it counts from this visit.
   */
  readonly deadlineFrom: number | null
}

export interface RunMemory {
  readonly visit: VisitState | null
  /** Next interruption ordinal. */
  readonly interruptions: number
  /** The abort no natural successor has followed yet; terminal events carry it. */
  readonly outstanding: Provenance | null
  /**
   * An abort whose natural successor went out but whose clear on the row has not landed yet:
   * the run's end clears it (`RunTransition.End.answered`) instead of reusing it.
   */
  readonly answered: Provenance | null
  /**
   * `outputs`, `results` and `history` grow in place, one entry per finished visit (copying them
   * at every step made a step cost as much as the run so far). A node's context holds these very
   * objects, as it always did; a reference a node keeps past its visit sees later steps too.
   */
  readonly outputs: Record<string, unknown>
  readonly results: Record<string, NodeResult>
  /** Finished visits in step order (what `StepContext.history` shows). */
  readonly history: Array<VisitRecord>
  /** Visits with an outcome (what maxSteps counts). */
  readonly finished: number
  readonly claimLostReported: boolean
  /** A renewal found the claim gone: no write of this runner can land any more. */
  readonly claimGone: boolean
  /**
   * Until when (epoch ms) this runner's lease surely holds: the claim's expiry, then the start
   * of each successful renewal plus the lease. Past it another process may take the run over.
   */
  readonly leaseUntil: number
}

export interface ActiveRun {
  readonly runId: string
  readonly ref: RunRef
  readonly fence: Fence
  readonly workflow: LoadedWorkflow
  readonly input: unknown
  readonly lock: Effect.Semaphore
  readonly stop: Deferred.Deferred<StopRequest>
  /** Completed when the runner fiber has stopped (ended, parked, held or lost its claim). */
  readonly finished: Deferred.Deferred<void>
  readonly memory: Ref.Ref<RunMemory>
}

export interface EngineSettings {
  readonly defaultTimeoutMs: number
  readonly leaseMs: number
  readonly renewEveryMs: number
}

/** What the runner needs, resolved once by the engine. */
export interface RunnerDeps {
  readonly store: RunStoreService
  readonly coordinator: CoordinatorService
  readonly events: SourceEventsService
  readonly settings: EngineSettings
  /** How a settle that failed is retried (`TimingPolicy.settleRetry`, as the engine was built with). */
  readonly settleRetry: Schedule.Schedule<unknown, unknown>
  /** True once the engine is shutting down or its scope is closing. */
  readonly closing: Effect.Effect<boolean>
  /** Run an effect detached from the runner (presentations), in the engine's scope. */
  readonly background: (effect: Effect.Effect<void>) => Effect.Effect<void>
  /** Where `ctx.progress` reports go, when the app wires notifications. */
  readonly progress: Option.Option<StepProgressService>
}

export const newId = (prefix: string) => Effect.sync(() => `${prefix}-${randomUUID()}`)

export const workflowRefOf = (name: string, revision: number | null) =>
  revision === null ? name : `${name}@${revision}`

export const runRefOf = (record: RunRecord): RunRef => ({
  runId: record.runId,
  workflowRef: record.workflowRef,
  workflowName: record.workflowName,
  targetSessionId: record.targetSessionId,
  origin: record.origin
})

/** Rebuild what later nodes see from the durable step records. */
export const memoryOf = (record: RunRecord, steps: ReadonlyArray<StepRecord>): RunMemory => {
  const outputs: Record<string, unknown> = {}
  const results: Record<string, NodeResult> = {}
  const history: Array<VisitRecord> = []
  let finished = 0
  for (const step of steps) {
    if (step.outcome === null) continue
    finished++
    const result: NodeResult = {
      outcome: step.outcome,
      attemptId: step.attemptId,
      ...Option.match(step.output, { onNone: () => ({}), onSome: (output) => ({ output }) }),
      ...(step.error === null ? {} : { error: step.error })
    }
    results[step.nodeId] = result
    history.push({ nodeId: step.nodeId, ...result })
    if (step.outcome === "ok") outputs[step.nodeId] = Option.getOrNull(step.output)
  }
  return {
    visit: null,
    interruptions: record.interruptions,
    outstanding: record.abortPending ? record.abort : null,
    answered: null,
    outputs,
    results,
    history,
    finished,
    claimLostReported: false,
    claimGone: false,
    leaseUntil: record.claimExpiresAt ?? 0
  }
}
