/**
 * RunStore: durable workflow runs, step records, agent requests and the run queue, in the
 * controller database. This module is the service contract; `run-store-sqlite.ts` implements it.
 *
 * Queue rules: `reserve` enqueues (one queued/running/waiting run per origin session); `claim`
 * takes a run with a token and a lease; `renew` extends the lease. Every runner write takes a
 * `Fence` and first verifies, in the same transaction, that the token still holds the claim,
 * so a runner that lost its claim writes nothing.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { StoreFailure } from "./store-errors.ts"
import type { Provenance, RunOrigin } from "../domain/event-policy.ts"
import type {
  ClaimLost,
  ClaimRefused,
  RequestNotOpen,
  ReservationConflict,
  RunNotFound
} from "./run-errors.ts"

export const RunState = Schema.Literal(
  "queued",
  "running",
  "waiting",
  "completed",
  "failed",
  "timed_out",
  "cancelled"
)
export type RunState = typeof RunState.Type
export type TerminalRunState = "completed" | "failed" | "timed_out" | "cancelled"
export const isTerminal = (state: RunState): state is TerminalRunState =>
  state === "completed" || state === "failed" || state === "timed_out" || state === "cancelled"

export const StepOutcome = Schema.Literal("ok", "timed_out", "failed", "cancelled")
export type StepOutcome = typeof StepOutcome.Type

/**
 * How a run ended, as facts the ending code states (never read back from a message):
 * - completed: the workflow reached its last step;
 * - failed: a node failed, or the run stood at a node the loaded workflow lacks;
 * - maxSteps: the run used up its step budget;
 * - timedOut: a node reached its time limit;
 * - cancelled: the agent or the user cancelled it;
 * - launchFailed: activation refused the queued run before any node ran;
 * - controllerInterrupted: the workflow controller stopped it.
 */
export const EndKind = Schema.Literal(
  "completed",
  "failed",
  "maxSteps",
  "timedOut",
  "cancelled",
  "launchFailed",
  "controllerInterrupted"
)
export type EndKind = typeof EndKind.Type

/** Who ended a run: the engine (the run's own course, or a refused launch), the agent, the user, the controller. */
export const EndBy = Schema.Literal("engine", "agent", "user", "controller")
export type EndBy = typeof EndBy.Type

/** A run's end: its kind, who ended it, and the node (and attempt) it stood at then. */
export const RunEnd = Schema.Struct({
  kind: EndKind,
  by: EndBy,
  nodeId: Schema.NullOr(Schema.String),
  attemptId: Schema.NullOr(Schema.String)
})
export type RunEnd = typeof RunEnd.Type

/** Why a run ended badly: the message, the node it happened at, and the node's own error. */
export const RunError = Schema.Struct({
  message: Schema.String,
  nodeId: Schema.NullOr(Schema.String),
  original: Schema.NullOr(Schema.String)
})
export type RunError = typeof RunError.Type

export const SubmitReceipt = Schema.Struct({
  schema: Schema.Literal("pi-workflows.submit-receipt.v1"),
  runId: Schema.String,
  requestId: Schema.String,
  nodeId: Schema.String,
  attemptId: Schema.String,
  acceptedAt: Schema.String
})
export type SubmitReceipt = typeof SubmitReceipt.Type

export interface RunRecord {
  readonly runId: string
  readonly workflowName: string
  readonly workflowRef: string
  readonly revision: number | null
  readonly sourceFingerprint: string
  /** The stored definition snapshot, decoded as JSON (the engine decodes its schema). */
  readonly snapshot: unknown
  readonly targetSessionId: string
  readonly origin: RunOrigin
  readonly input: unknown
  readonly state: RunState
  /** The node to run next, or the node in flight when `currentAttemptId` is set. */
  readonly currentNodeId: string | null
  readonly currentAttemptId: string | null
  readonly maxSteps: number
  /** The run's result (the last node's output) once completed. */
  readonly result: Option.Option<unknown>
  readonly error: RunError | null
  /** How the run ended (`end_*` columns); null while it has not ended. */
  readonly end: RunEnd | null
  readonly pauseRequested: boolean
  /**
   * Who asked to cancel: on a live run, a cancel the runner has not applied yet; on a run that
   * ended `cancelled`, who cancelled it (kept by the end; null on rows ended before it was kept).
   */
  readonly cancelRequested: "agent" | "user" | null
  readonly parkedReason: string | null
  /** Next interruption ordinal of the run. */
  readonly interruptions: number
  /** The latest recorded abort provenance. */
  readonly abort: Provenance | null
  /** True while no natural successor (prompt or presentation) followed that abort. */
  readonly abortPending: boolean
  readonly claimToken: string | null
  readonly claimExpiresAt: number | null
  readonly claims: number
  readonly openRequestId: string | null
  /** Visits that produced an outcome (what `maxSteps` counts). */
  readonly stepCount: number
  readonly createdAt: string
  readonly updatedAt: string
  readonly startedAt: string | null
  readonly endedAt: string | null
}

/** Durable facts about a run beside its state (see `workflow_run_events`). */
export const RunEventKind = Schema.Literal("guaranteeLost", "presented")
export type RunEventKind = typeof RunEventKind.Type

export interface RunEvent {
  readonly runId: string
  readonly seq: number
  readonly kind: RunEventKind
  readonly message: string
  readonly at: string
}

/** What an old runner's claim-loss interruption found when it wrote its provenance. */
export type HandoffResult =
  /** The run continues under another owner: its terminal outcome reuses this provenance. */
  | { readonly _tag: "Recorded"; readonly run: RunRecord }
  /** The run had already ended: no owner will reuse the provenance (a no-successor handoff). */
  | { readonly _tag: "Ended"; readonly run: RunRecord }
  /** The new owner has an interruption of its own outstanding; that one is kept. */
  | { readonly _tag: "Kept"; readonly run: RunRecord }
  /**
   * The new owner has already opened the request of a later step than the aborted one: its
   * prompt is the session's successor turn, so nothing is recorded and no claim-loss intent is
   * owed (only when asked for with `unlessSuperseded`).
   */
  | { readonly _tag: "Superseded"; readonly run: RunRecord }

export interface StepRecord {
  readonly runId: string
  readonly seq: number
  readonly nodeId: string
  readonly attemptId: string
  readonly timeoutMs: number | null
  readonly outcome: StepOutcome | null
  readonly output: Option.Option<unknown>
  readonly error: string | null
  readonly interrupted: string | null
  readonly startedAt: string
  readonly endedAt: string | null
}

export interface RequestRecord {
  readonly requestId: string
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  readonly state: "open" | "submitted" | "closed"
  readonly closedReason: string | null
  readonly output: Option.Option<unknown>
  readonly receipt: SubmitReceipt | null
  readonly openedAt: string
  readonly endedAt: string | null
}

export interface NewRun {
  readonly runId: string
  readonly workflowName: string
  readonly workflowRef: string
  readonly revision: number | null
  readonly sourceFingerprint: string
  readonly snapshot: unknown
  readonly targetSessionId: string
  readonly origin: RunOrigin
  readonly input: unknown
  readonly startAt: string
  readonly maxSteps: number
}

/** The claim a runner writes under. */
export interface Fence {
  readonly runId: string
  readonly token: string
}

/** Control requests a live runner picks up from its lease renewals. */
export interface ControlFlags {
  readonly pauseRequested: boolean
  readonly cancelRequested: "agent" | "user" | null
}

/** What happens to the visit's step row when it is settled. */
export type StepUpdate =
  | {
      readonly _tag: "Outcome"
      readonly outcome: StepOutcome
      readonly output?: unknown
      readonly error?: string
      readonly timeoutMs: number | null
    }
  | { readonly _tag: "Interrupted"; readonly reason: string }

/** Where the run goes after a settlement. */
export type RunTransition =
  | { readonly _tag: "Continue"; readonly nodeId: string }
  | {
      readonly _tag: "End"
      readonly state: TerminalRunState
      readonly result?: unknown
      readonly error?: RunError
      /**
       * The runner's outstanding abort, whose own write may not have landed: recorded with the
       * end unless the row already has one pending, so whoever recomputes the run's debt from
       * the row (reconciliation) addresses the same intent as the runner's terminal event.
       */
      readonly abort?: Provenance
      /**
       * An abort whose natural successor (a workflow prompt) went out while its clear
       * (`clearInterruption`) did not land: cleared with the end when it is still the row's
       * pending abort, so the end does not reuse an interruption the model already had a turn for.
       */
      readonly answered?: Provenance
      /** Who cancelled the run (state `cancelled`): kept on the ended row as `cancelRequested`. */
      readonly cancelledBy?: "agent" | "user"
      /**
       * How the run ended, recorded on the row. Absent: the state's plain kind (`completed`,
       * `failed`, `timedOut`, `cancelled`) by the engine, or for a cancel by whoever
       * `cancelledBy` (else the row's cancel request, else the user) names, at the row's
       * current node and attempt.
       */
      readonly end?: RunEnd
    }
  /** Release the claim; a later resume continues (and reruns an interrupted visit). */
  | { readonly _tag: "Park"; readonly reason: string }
  /** Hold at the step boundary: `waiting`, claim released, until explicit resume. */
  | { readonly _tag: "Hold" }

export interface Settlement {
  /** The visit being settled; absent at a step boundary. */
  readonly attemptId?: string
  readonly step?: StepUpdate
  /** Close the visit's open request (if any) with this reason. */
  readonly closeRequest?: string
  readonly next: RunTransition
}

export type PauseResult =
  | { readonly _tag: "Held"; readonly run: RunRecord }
  | { readonly _tag: "Requested"; readonly run: RunRecord }
  | { readonly _tag: "Refused"; readonly run: RunRecord }

export type CancelResult =
  | { readonly _tag: "Cancelled"; readonly run: RunRecord }
  | { readonly _tag: "Requested"; readonly run: RunRecord }
  | { readonly _tag: "Refused"; readonly run: RunRecord }

export interface RunListQuery {
  readonly targetSessionId?: string
  readonly state?: RunState
  /** Clamped to 1 … 1000. */
  readonly limit: number
}

type Fenced<A> = Effect.Effect<A, ClaimLost | StoreFailure>

export interface RunStoreService {
  // Queue
  readonly reserve: (run: NewRun) => Effect.Effect<RunRecord, ReservationConflict | StoreFailure>
  /** The oldest queued run of a session. */
  readonly nextQueued: (sessionId: string) => Effect.Effect<Option.Option<RunRecord>, StoreFailure>
  /**
   * `activate`: a queued run becomes running under the token. `resume`: a running (parked or
   * lease-expired) or waiting run is taken over under the token.
   */
  readonly claim: (input: {
    readonly runId: string
    readonly token: string
    readonly leaseMs: number
    readonly mode: "activate" | "resume"
    /**
     * Resume even though this token's lease has not expired: the caller proved its owner dead.
     * Compare-and-set: refused when the run's claim is any other token by now.
     */
    readonly takeoverFrom?: string
  }) => Effect.Effect<RunRecord, RunNotFound | ClaimRefused | StoreFailure>
  readonly renew: (fence: Fence, leaseMs: number) => Fenced<ControlFlags>
  /**
   * The runner's step-boundary check: the claim still held and its control requests, read
   * without the rest of the row (no snapshot, no step count), so a step costs the same at any
   * length of the run or size of its workflow.
   */
  readonly control: (fence: Fence) => Fenced<ControlFlags>

  // Runner writes (fenced)
  readonly startStep: (
    fence: Fence,
    input: { readonly nodeId: string; readonly attemptId: string }
  ) => Fenced<StepRecord>
  readonly openRequest: (
    fence: Fence,
    input: { readonly requestId: string; readonly nodeId: string; readonly attemptId: string }
  ) => Fenced<RequestRecord>
  /** Record abort provenance and advance the interruption ordinal past it. */
  readonly recordInterruption: (fence: Fence, provenance: Provenance) => Fenced<void>
  /**
   * Claim loss: the old runner records the provenance of the turn it aborts, without a claim.
   * Never overwrites an ended run or an outstanding interruption of the new owner. With
   * `unlessSuperseded`, records nothing when the new owner has already opened a later request.
   */
  readonly recordHandoff: (
    runId: string,
    provenance: Provenance,
    options?: { readonly unlessSuperseded?: boolean }
  ) => Effect.Effect<HandoffResult, RunNotFound | StoreFailure>
  /** A natural successor was sent after the recorded abort. */
  readonly clearInterruption: (fence: Fence) => Fenced<void>
  /** The request is answered and its step ends `ok` with the output, in one transaction. */
  readonly submit: (
    fence: Fence,
    input: {
      readonly requestId: string
      readonly output: unknown
      readonly receipt: SubmitReceipt
      /** The visit's resolved limit, recorded on its step. */
      readonly timeoutMs: number | null
    }
  ) => Effect.Effect<RequestRecord, ClaimLost | RequestNotOpen | StoreFailure>
  readonly settle: (fence: Fence, settlement: Settlement) => Fenced<RunRecord>

  // Control without a claim
  /** Hold now when no live claim exists, else ask the owner to hold at its next boundary. */
  readonly requestPause: (runId: string) => Effect.Effect<PauseResult, RunNotFound | StoreFailure>
  /** Withdraw a pause request the owner has not honoured yet; the run, if so, else none. */
  readonly withdrawPause: (
    runId: string
  ) => Effect.Effect<Option.Option<RunRecord>, RunNotFound | StoreFailure>
  /** Cancel now when no live claim exists, else ask the owner to cancel. */
  readonly cancel: (
    runId: string,
    by: "agent" | "user"
  ) => Effect.Effect<CancelResult, RunNotFound | StoreFailure>

  /** Append a durable run event (no claim needed; the run must exist). */
  readonly recordEvent: (
    runId: string,
    event: { readonly kind: RunEventKind; readonly message: string }
  ) => Effect.Effect<RunEvent, RunNotFound | StoreFailure>
  readonly events: (runId: string) => Effect.Effect<ReadonlyArray<RunEvent>, StoreFailure>

  // Reads
  readonly get: (runId: string) => Effect.Effect<Option.Option<RunRecord>, StoreFailure>
  readonly listBySession: (
    sessionId: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<RunRecord>, StoreFailure>
  /** Newest first, across sessions unless `targetSessionId` is given (operator listings). */
  readonly list: (query: RunListQuery) => Effect.Effect<ReadonlyArray<RunRecord>, StoreFailure>
  readonly steps: (runId: string) => Effect.Effect<ReadonlyArray<StepRecord>, StoreFailure>
  readonly request: (requestId: string) => Effect.Effect<Option.Option<RequestRecord>, StoreFailure>
}

export class RunStore extends Context.Tag("pi-workflow-turns/RunStore")<RunStore, RunStoreService>() {}
