/**
 * Waiting checkpoints in the RunStore contract: a run at a `wait` node holds no claim. Its runner
 * opens the request and sets the run `waiting` in one fenced write (`wait`) and stops; the first
 * answer (`answerWait`) or the passing of its deadline (`expireWait`) settles the node's step and
 * makes the run `running` and unclaimed again, so whichever process claims it next routes from the
 * settled step. Each of the two is one transaction that checks the wait is still open, so one
 * wins a race, across processes. Implemented in `run-waits-sql.ts`.
 */
import { Schema } from "effect"

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

/**
 * Version 7's DDL (`type`: the text type, `big`: the epoch-millisecond type). Here, not in the SQL
 * module: both backends' migration lists import it, and that module's imports lead back to them.
 */
export const waitsTable = (type: string, big: string): ReadonlyArray<string> => [
  `CREATE TABLE workflow_waits (
  request_id ${type} PRIMARY KEY NOT NULL,
  run_id ${type} NOT NULL,
  node_id ${type} NOT NULL,
  attempt_id ${type} NOT NULL,
  prompt ${type} NOT NULL,
  since ${type} NOT NULL,
  deadline_at ${big},
  answered_by ${type} CHECK (answered_by IS NULL OR answered_by IN ('agent', 'user')),
  answered_at ${type}
)`,
  "CREATE INDEX workflow_waits_by_run ON workflow_waits (run_id)"
]
