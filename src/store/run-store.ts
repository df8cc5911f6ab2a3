/**
 * RunStore: durable workflow runs, step records, agent requests and the run queue. This module
 * is the service contract (its typed errors, none of which means anything changed, are in
 * `run-errors.ts`); `run-store-sql.ts` implements it. `reserve` enqueues (one queued/running/waiting run per origin session); `claim`
 * takes a run with a token and a lease; `renew` extends it. Every runner write takes a `Fence`
 * and first verifies, in the same transaction, that the token still holds the claim.
 */
import { Context, type Effect, type Option, Schema } from "effect"
import type { Provenance, RunOrigin } from "../domain/event-policy.ts"
import type {
  ClaimLost,
  ClaimRefused,
  RequestNotOpen,
  ReservationConflict,
  RunNotFound
} from "./run-errors.ts"
import type { AnsweredBy, AnswerResult, NewWait, WaitRecord } from "./run-waits.ts"
import type { RunEnd, RunError } from "./run-end.ts"
import type { AdoptionFacts, RunEvent, RunEventKind } from "./run-events.ts"
import type { StoreFailure } from "./store-errors.ts"

export const TerminalRunState = Schema.Literal("completed", "failed", "timed_out", "cancelled")
export type TerminalRunState = typeof TerminalRunState.Type
export const RunState = Schema.Literal("queued", "running", "waiting", ...TerminalRunState.literals)
export type RunState = typeof RunState.Type
export const isTerminal = (state: RunState): state is TerminalRunState =>
  state === "completed" || state === "failed" || state === "timed_out" || state === "cancelled"

export const StepOutcome = Schema.Literal("ok", "timed_out", "failed", "cancelled")
export type StepOutcome = typeof StepOutcome.Type

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
  /** Who asked to cancel: on a live run, not applied yet; on a run ended `cancelled`, who did (or null). */
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
  /** The open request of the waiting checkpoint the run stands at (state `waiting`), else null. */
  readonly waitRequestId: string | null
  /** Visits that produced an outcome (what `maxSteps` counts). */
  readonly stepCount: number
  readonly createdAt: string
  readonly updatedAt: string
  readonly startedAt: string | null
  readonly endedAt: string | null
}

/** What an old runner's claim-loss interruption found when it wrote its provenance. */
export type HandoffResult =
  /** The run continues under another owner: its terminal outcome reuses this provenance. */
  | { readonly _tag: "Recorded"; readonly run: RunRecord }
  /** The run had already ended: no owner will reuse the provenance (a no-successor handoff). */
  | { readonly _tag: "Ended"; readonly run: RunRecord }
  /** The new owner has an interruption of its own outstanding; that one is kept. */
  | { readonly _tag: "Kept"; readonly run: RunRecord }
  // (Only with `unlessSuperseded`.) The new owner already opened a later step's request: its prompt
  // is the session's successor turn, so nothing is recorded and no claim-loss intent is owed.
  | { readonly _tag: "Superseded"; readonly run: RunRecord }

/** The process that ran a step visit: its machine and process ID (from the runner's claim). */
export interface StepRunner {
  readonly host: string
  readonly pid: number
}

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
  /** Who ran the visit; null for visits of older releases. A change from the visit before is a takeover. */
  readonly runner: StepRunner | null
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
      // The runner's outstanding abort, whose own write may not have landed: recorded with the end
      // unless the row has one pending, so reconciliation addresses the runner's intent.
      readonly abort?: Provenance
      // An abort whose workflow prompt went out but whose `clearInterruption` did not land: cleared
      // with the end if still pending, so the end does not reuse an interruption already answered.
      readonly answered?: Provenance
      /** Who cancelled the run (state `cancelled`): kept on the ended row as `cancelRequested`. */
      readonly cancelledBy?: "agent" | "user"
      // How the run ended, recorded on the row. Absent: the state's plain kind by the engine (for a
      // cancel: by `cancelledBy`, else the row's cancel request, else the user) at the current node.
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

/** A settlement that continues the run at another node. */
export interface Advance extends Settlement {
  readonly next: Extract<RunTransition, { readonly _tag: "Continue" }>
}

type Outcome<Tag extends string> = { readonly _tag: Tag; readonly run: RunRecord }
export type PauseResult = Outcome<"Held"> | Outcome<"Requested"> | Outcome<"Refused">
export type CancelResult = Outcome<"Cancelled"> | Outcome<"Requested"> | Outcome<"Refused">

export interface RunListQuery {
  readonly targetSessionId?: string
  readonly state?: RunState
  /** Clamped to 1 … 1000. */
  readonly limit: number
}

type Fenced<A> = Effect.Effect<A, ClaimLost | StoreFailure>
type Found<A> = Effect.Effect<A, RunNotFound | StoreFailure>
type Read<A> = Effect.Effect<A, StoreFailure>

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
  /**
   * `claim` (resume) for the session `sessionId`, which adopts the run: in the claim's transaction
   * its target session, pending turn intents (re-keyed) and undelivered notifications move, and an
   * `adopted` event records it (docs/store.md). Refused as `claim` is, as `delivering` while one of
   * those intents has a live delivery claim, with `ReservationConflict` while `sessionId` has
   * another active run. A run already `sessionId`'s is claimed with no event. A waiting run
   * moves the same way but stays waiting, unclaimed (refused `waiting` for its own session).
   */
  readonly adopt: (input: {
    readonly runId: string
    readonly token: string
    readonly leaseMs: number
    readonly sessionId: string
    readonly takeoverFrom?: string
  }) => Effect.Effect<
    { readonly run: RunRecord; readonly adoption: AdoptionFacts | null },
    RunNotFound | ClaimRefused | ReservationConflict | StoreFailure
  >
  readonly renew: (fence: Fence, leaseMs: number) => Fenced<ControlFlags>
  /**
   * The runner's step-boundary check: the claim still held and its control requests, without the
   * rest of the row, so a step costs the same at any length of the run or size of its workflow.
   */
  readonly control: (fence: Fence) => Fenced<ControlFlags>

  // Runner writes (fenced)
  readonly startStep: (
    fence: Fence,
    input: { readonly nodeId: string; readonly attemptId: string; readonly runner?: StepRunner }
  ) => Fenced<StepRecord>
  /** The visit's limit on its step once resolved, so views of a step in flight show it (fenced). */
  readonly recordLimit: (
    fence: Fence,
    input: { readonly attemptId: string; readonly timeoutMs: number | null }
  ) => Fenced<void>
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
  ) => Found<HandoffResult>
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
  /** `settle` of a `Continue` without reading the run back: the runner's write after each step. */
  readonly advance: (fence: Fence, settlement: Advance) => Fenced<void>

  // Waiting checkpoints (run-waits.ts)
  /** Open the wait's request and set the run `waiting` with no claim, in one fenced write; the wait. */
  readonly wait: (fence: Fence, input: NewWait) => Fenced<WaitRecord>
  /** The first answer: the step ends `ok` with `{answer}` and the run is `running`, unclaimed. */
  readonly answerWait: (input: {
    readonly requestId: string
    readonly answer: unknown
    readonly receipt: SubmitReceipt
    readonly by: AnsweredBy
  }) => Read<AnswerResult>
  /** A wait whose deadline passed: its step ends `timed_out` with `error`, the run is `running`. */
  readonly expireWait: (input: {
    readonly requestId: string
    readonly error: string
  }) => Read<Option.Option<WaitRecord>>
  readonly waitOf: (requestId: string) => Read<Option.Option<WaitRecord>>
  /** Oldest first; `open`: only waits whose request is still open; `sessionId`: its runs' waits. */
  readonly waits: (query: {
    readonly runId?: string
    readonly sessionId?: string
    readonly open?: boolean
    readonly limit?: number
  }) => Read<ReadonlyArray<WaitRecord>>

  // Control without a claim
  /** Hold now when no live claim exists, else ask the owner to hold at its next boundary. */
  readonly requestPause: (runId: string) => Found<PauseResult>
  /** Withdraw a pause request the owner has not honoured yet; the run, if so, else none. */
  readonly withdrawPause: (runId: string) => Found<Option.Option<RunRecord>>
  /** Cancel now when no live claim exists, else ask the owner to cancel. */
  readonly cancel: (runId: string, by: "agent" | "user") => Found<CancelResult>

  /** Append a durable run event (no claim needed; the run must exist). */
  readonly recordEvent: (
    runId: string,
    event: { readonly kind: Exclude<RunEventKind, "adopted">; readonly message: string }
  ) => Found<RunEvent>
  readonly events: (runId: string) => Effect.Effect<ReadonlyArray<RunEvent>, StoreFailure>

  // Reads
  readonly get: (runId: string) => Effect.Effect<Option.Option<RunRecord>, StoreFailure>
  readonly listBySession: (sessionId: string, limit: number) => Read<ReadonlyArray<RunRecord>>
  /** Newest first, across sessions unless `targetSessionId` is given (operator listings). */
  readonly list: (query: RunListQuery) => Effect.Effect<ReadonlyArray<RunRecord>, StoreFailure>
  readonly steps: (runId: string) => Effect.Effect<ReadonlyArray<StepRecord>, StoreFailure>
  readonly request: (requestId: string) => Effect.Effect<Option.Option<RequestRecord>, StoreFailure>
}

export class RunStore extends Context.Tag("pi-workflow-turns/RunStore")<RunStore, RunStoreService>() {}

// The store's typed errors (their own module; named here as well, where callers look for them).
export { ClaimLost, ClaimRefused, RequestNotOpen, ReservationConflict, RunNotFound } from "./run-errors.ts"
