/**
 * Waiting checkpoints in the RunStore contract: a run at a `wait` node holds no claim. Its runner
 * opens the request and sets the run `waiting` in one fenced write (`wait`) and stops; the first
 * answer (`answerWait`) or the passing of its deadline (`expireWait`) settles the node's step and
 * makes the run `running` and unclaimed again, so whichever process claims it next routes from the
 * settled step. Each of the two is one transaction that checks the wait is still open, so one
 * wins a race, across processes. Implemented in `run-waits-sql.ts`.
 */
import { type Effect, type Option, Schema } from "effect"
import type { ClaimLost, Fence, RunRecord, SubmitReceipt } from "./run-store.ts"
import type { StoreFailure } from "./store-errors.ts"

export const AnsweredBy = Schema.Literal("agent", "user")
export type AnsweredBy = typeof AnsweredBy.Type

/** One waiting checkpoint (`workflow_waits` with its request's state). */
export interface WaitRecord {
  readonly requestId: string
  readonly runId: string
  readonly nodeId: string
  readonly attemptId: string
  /** The question as it was sent (redacted, bounded): the presentation is rebuilt from it. */
  readonly prompt: string
  /** When the run began to wait (ISO). */
  readonly since: string
  /** Epoch milliseconds when the wait times out; null: no limit. */
  readonly deadlineAt: number | null
  /** The step's resolved limit (null: none). */
  readonly timeoutMs: number | null
  /** The request's state: `open` while the run waits. */
  readonly state: "open" | "submitted" | "closed"
  readonly closedReason: string | null
  readonly answeredBy: AnsweredBy | null
  readonly answeredAt: string | null
  /** The answer once given. */
  readonly answer: unknown
}

export interface NewWait {
  readonly nodeId: string
  readonly attemptId: string
  readonly requestId: string
  readonly prompt: string
  readonly deadlineAt: number | null
  /** The step's resolved limit, recorded on its row. */
  readonly timeoutMs: number | null
}

/** What an answer found: it won, or the wait was not open (answered, timed out, run ended). */
export type AnswerResult =
  | { readonly _tag: "Answered"; readonly wait: WaitRecord }
  | { readonly _tag: "NotOpen"; readonly wait: WaitRecord }

/** The bound of a stored prompt; longer text is clipped (the presentation has its own bound). */
export const MAX_WAIT_PROMPT_CHARS = 16_000

type Read<A> = Effect.Effect<A, StoreFailure>

export interface WaitOperations {
  /** Open the wait's request and set the run `waiting` with no claim, in one fenced write. */
  readonly wait: (fence: Fence, input: NewWait) => Effect.Effect<RunRecord, ClaimLost | StoreFailure>
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
}
