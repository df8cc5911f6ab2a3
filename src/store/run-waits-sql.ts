/**
 * Waiting checkpoints on the controller database (contract: `run-waits.ts`): the table
 * `workflow_waits` (schema version 7, both backends) beside the request row it answers, and the
 * three writes. `wait` is fenced like every runner write; `answerWait` and `expireWait` need no
 * claim (a waiting run has none): each is one immediate transaction whose first statement only
 * succeeds while the wait's request is open and its run `waiting`, so of two answers, or an answer
 * and the deadline, exactly one changes anything, also across processes and on PostgreSQL (the
 * row lock of that UPDATE orders them).
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import { Clock, Effect, Option, Schema } from "effect"
import type { DatabaseService } from "./database.ts"
import type { RunStoreService, SubmitReceipt } from "./run-store.ts"
import { AnsweredBy, type AnswerResult, type NewWait, type WaitRecord } from "./run-waits.ts"
import { fencedIn, iso } from "./run-writes-sql.ts"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"

const WaitRow = Schema.Struct({
  request_id: Schema.String,
  run_id: Schema.String,
  node_id: Schema.String,
  attempt_id: Schema.String,
  prompt: Schema.String,
  since: Schema.String,
  deadline_at: Schema.NullOr(Schema.Number),
  answered_by: Schema.NullOr(AnsweredBy),
  answered_at: Schema.NullOr(Schema.String),
  state: Schema.Literal("open", "submitted", "closed"),
  closed_reason: Schema.NullOr(Schema.String),
  output_json: Schema.NullOr(Schema.String),
  timeout_ms: Schema.NullOr(Schema.Number)
})
const decodeWaits = Schema.decodeUnknown(Schema.Array(WaitRow))
const decodeWon = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ run_id: Schema.String, attempt_id: Schema.String }))
)
const AnswerOutput = Schema.parseJson(Schema.Struct({ answer: Schema.Unknown }))
const decodeAnswer = Schema.decodeUnknownOption(AnswerOutput)

const toWait = (row: typeof WaitRow.Type): WaitRecord => ({
  requestId: row.request_id,
  runId: row.run_id,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  prompt: row.prompt,
  since: row.since,
  deadlineAt: row.deadline_at,
  timeoutMs: row.timeout_ms,
  state: row.state,
  closedReason: row.closed_reason,
  answeredBy: row.answered_by,
  answeredAt: row.answered_at,
  answer:
    row.output_json === null
      ? undefined
      : Option.getOrUndefined(Option.map(decodeAnswer(row.output_json), (o) => o.answer))
})

type WaitOperations = Pick<RunStoreService, "wait" | "answerWait" | "expireWait" | "waitOf" | "waits">

export const makeWaits = (sql: SqlClient.SqlClient, db: DatabaseService): WaitOperations => {
  const fenced = fencedIn(sql, db)
  const waitsWhere = (where: Statement.Fragment) =>
    sql`SELECT w.*, q.state, q.closed_reason, q.output_json, s.timeout_ms FROM workflow_waits w
      JOIN workflow_requests q ON q.request_id = w.request_id
      JOIN workflow_steps s ON s.attempt_id = w.attempt_id WHERE ${where}`

  const readWait = (requestId: string) =>
    waitsWhere(sql`w.request_id = ${requestId}`).pipe(
      Effect.flatMap(decodeWaits),
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toWait))
    )

  const requireWait = (requestId: string, operation: string) =>
    Effect.flatMap(
      readWait(requestId),
      Option.match({
        onNone: () => Effect.fail(new StoreFailure({ operation, message: `no wait ${requestId}` })),
        onSome: Effect.succeed
      })
    )

  const wait: WaitOperations["wait"] = (fence, input: NewWait) =>
    fenced(
      "wait",
      fence,
      Effect.gen(function* () {
        const now = iso(yield* Clock.currentTimeMillis)
        yield* sql`INSERT INTO workflow_requests (request_id, run_id, node_id, attempt_id, state, opened_at)
          VALUES (${input.requestId}, ${fence.runId}, ${input.nodeId}, ${input.attemptId}, 'open', ${now})`
        yield* sql`INSERT INTO workflow_waits (request_id, run_id, node_id, attempt_id, prompt, since, deadline_at)
          VALUES (${input.requestId}, ${fence.runId}, ${input.nodeId}, ${input.attemptId}, ${input.prompt},
            ${now}, ${input.deadlineAt})`
        yield* sql`UPDATE workflow_steps SET timeout_ms = ${input.timeoutMs}
          WHERE attempt_id = ${input.attemptId} AND outcome IS NULL AND interrupted IS NULL`
        // No claim while it waits: nothing runs, nothing renews, nothing costs anything. A pending
        // abort is answered from here on (by this wait's presentation, or by its fallback when the
        // presentation cannot be sent): the run's end must owe its own turn, never reuse that one,
        // even when the answer comes before the presentation's resolution is stored.
        yield* sql`UPDATE workflow_runs SET state = 'waiting', claim_token = NULL, claim_expires_at = NULL,
            pause_requested = 0, parked_reason = NULL, abort_pending = 0, updated_at = ${now}
          WHERE run_id = ${fence.runId}`
        return yield* requireWait(input.requestId, "wait")
      })
    )

  /** The wait's request open and its run waiting at that attempt: the condition of both writes. */
  const stillWaiting = (requestId: string) =>
    sql`request_id = ${requestId} AND state = 'open' AND EXISTS (SELECT 1 FROM workflow_runs r
        WHERE r.run_id = workflow_requests.run_id AND r.state = 'waiting'
          AND r.current_attempt_id = workflow_requests.attempt_id)`

  const resume = (runId: string, now: string) =>
    sql`UPDATE workflow_runs SET state = 'running', updated_at = ${now} WHERE run_id = ${runId}`

  const answerWait: WaitOperations["answerWait"] = (input) =>
    db
      .immediate(
        Effect.gen(function* () {
          const now = iso(yield* Clock.currentTimeMillis)
          const output = JSON.stringify({ answer: input.answer })
          const won = yield* sql`UPDATE workflow_requests SET state = 'submitted', output_json = ${output},
              receipt_json = ${JSON.stringify(input.receipt satisfies SubmitReceipt)}, ended_at = ${now}
            WHERE ${stillWaiting(input.requestId)} RETURNING run_id, attempt_id`.pipe(
            Effect.flatMap(decodeWon)
          )
          const row = won[0]
          if (row === undefined)
            return {
              _tag: "NotOpen",
              wait: yield* requireWait(input.requestId, "answerWait")
            } as AnswerResult
          yield* sql`UPDATE workflow_steps SET outcome = 'ok', output_json = ${output}, ended_at = ${now}
            WHERE attempt_id = ${row.attempt_id} AND outcome IS NULL AND interrupted IS NULL`
          yield* sql`UPDATE workflow_waits SET answered_by = ${input.by}, answered_at = ${now}
            WHERE request_id = ${input.requestId}`
          yield* resume(row.run_id, now)
          return { _tag: "Answered", wait: yield* requireWait(input.requestId, "answerWait") } as AnswerResult
        })
      )
      .pipe(asStoreFailure("answerWait"))

  const expireWait: WaitOperations["expireWait"] = (input) =>
    db
      .immediate(
        Effect.gen(function* () {
          const millis = yield* Clock.currentTimeMillis
          const now = iso(millis)
          const won = yield* sql`UPDATE workflow_requests SET state = 'closed', closed_reason = 'timed_out',
              ended_at = ${now}
            WHERE ${stillWaiting(input.requestId)} AND EXISTS (SELECT 1 FROM workflow_waits w
              WHERE w.request_id = workflow_requests.request_id AND w.deadline_at IS NOT NULL
                AND w.deadline_at <= ${millis})
            RETURNING run_id, attempt_id`.pipe(Effect.flatMap(decodeWon))
          const row = won[0]
          if (row === undefined) return Option.none()
          yield* sql`UPDATE workflow_steps SET outcome = 'timed_out', error = ${input.error}, ended_at = ${now}
            WHERE attempt_id = ${row.attempt_id} AND outcome IS NULL AND interrupted IS NULL`
          yield* resume(row.run_id, now)
          return Option.some(yield* requireWait(input.requestId, "expireWait"))
        })
      )
      .pipe(asStoreFailure("expireWait"))

  const waitOf: WaitOperations["waitOf"] = (requestId) => readWait(requestId).pipe(asStoreFailure("waitOf"))

  const waits: WaitOperations["waits"] = (query) =>
    sql`${waitsWhere(
      sql.and([
        sql`1 = 1`,
        ...(query.runId === undefined ? [] : [sql`w.run_id = ${query.runId}`]),
        ...(query.sessionId === undefined
          ? []
          : [
              sql`EXISTS (SELECT 1 FROM workflow_runs r WHERE r.run_id = w.run_id
                AND r.target_session_id = ${query.sessionId})`
            ]),
        ...(query.open === true ? [sql`q.state = 'open'`] : [])
      ])
    )} ORDER BY w.since, w.request_id LIMIT ${Math.max(1, Math.min(1_000, Math.trunc(query.limit ?? 100)))}`.pipe(
      Effect.flatMap(decodeWaits),
      Effect.map((rows) => rows.map(toWait)),
      asStoreFailure("waits")
    )

  return { wait, answerWait, expireWait, waitOf, waits }
}
