/**
 * What the `serve` page reads: bounded pages after a cursor (one row more tells whether another
 * follows), the same on SQLite and PostgreSQL, decoded by the stores' own row schemas. A run is
 * read without its definition snapshot, input and result, a step without its output, and long
 * texts are cut in SQL to TEXT_READ characters (the view shows far fewer, so a cut never shows).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import type { TurnIntent } from "../domain/turn-intent.ts"
import { decodeRunEvents, toRunEvent } from "./run-events-sql.ts"
import { boundedLimit, decodeRuns, decodeSteps, derivedRunColumns, toRun, toStep } from "./run-rows.ts"
import type { RunState, StepRecord } from "./run-store.ts"
import type { RunEvent } from "./run-events.ts"
import { asStoreFailure } from "./store-errors.ts"
import { decodeIntents } from "./turn-intent-store-sql.ts"

export const TEXT_READ = 4_000
export const MAX_PAGE = 500
/** Steps read before a page: a takeover's visit may have begun there (its deadline counts from it). */
const LOOKBACK = 8

const Text = Schema.NullOr(Schema.String)
const WaitRow = Schema.Struct({
  request_id: Schema.String,
  attempt_id: Schema.String,
  prompt: Schema.String,
  deadline_at: Schema.NullOr(Schema.Number),
  answered_by: Text,
  answered_at: Text,
  state: Schema.String,
  answer: Text
})
export type WaitRow = typeof WaitRow.Type
const ReminderRow = Schema.Struct({
  attempt_id: Schema.String,
  ordinal: Schema.Number,
  created_at: Schema.String
})
export type ReminderRow = typeof ReminderRow.Type
const decodeWaits = Schema.decodeUnknown(Schema.Array(WaitRow))
const decodeReminders = Schema.decodeUnknown(Schema.Array(ReminderRow))

export interface RunFilter {
  readonly state?: RunState
  readonly workflow?: string
  /** A session ID or a prefix of one. */
  readonly session?: string
  readonly createdSince?: string
  readonly runId?: string
  readonly limit: number
}

export interface Page<A, C> {
  readonly rows: ReadonlyArray<A>
  /** The cursor after the last row; null when nothing follows. */
  readonly next: C | null
}

export interface StepPage extends Page<StepRecord, number> {
  readonly before: ReadonlyArray<StepRecord>
  readonly waits: ReadonlyArray<WaitRow>
  readonly reminders: ReadonlyArray<ReminderRow>
}

/** An intent page's cursor: the last row's request time and ID (the listing's order). */
export type IntentCursor = readonly [string, string]

const paged = <A, C>(rows: ReadonlyArray<A>, limit: number, cursor: (row: A) => C): Page<A, C> => {
  const last = rows[limit - 1]
  return { rows: rows.slice(0, limit), next: rows.length > limit && last !== undefined ? cursor(last) : null }
}

const make = (sql: SqlClient.SqlClient) => {
  // Limits are validated first and written into the text, as the stores do.
  const upTo = (n: number) => sql.literal(String(Math.max(1, Math.min(MAX_PAGE, Math.trunc(n))) + 1))
  const cut = (column: string) => sql.literal(`substr(${column}, 1, ${TEXT_READ})`)
  // An error too long to read is replaced by one saying so: the column's JSON must decode whole.
  const runColumns = sql`r.run_id, r.workflow_name, r.workflow_ref, r.revision, r.source_fingerprint,
    'null' AS snapshot_json, r.target_session_id, r.origin, 'null' AS input_json, r.state, r.current_node_id,
    r.current_attempt_id, r.max_steps, NULL AS result_json,
    CASE WHEN length(r.error_json) <= ${sql.literal(String(TEXT_READ))} THEN r.error_json
      ELSE '{"message":"(too long to show)","nodeId":null,"original":null}' END AS error_json,
    r.pause_requested, r.cancel_requested, r.parked_reason, r.interruptions, r.abort_cause, r.abort_node_id,
    r.abort_attempt_id, r.abort_interruption, r.abort_pending, r.claim_token, r.claim_expires_at, r.claims,
    r.end_kind, r.end_by, r.end_node_id, r.end_attempt_id, r.created_at, r.updated_at, r.started_at, r.ended_at,
    ${derivedRunColumns(sql)}`

  const runs = Effect.fn("TimelineReads.runs")(function* (filter: RunFilter) {
    const where = sql.and([
      sql`1 = 1`,
      ...(filter.state === undefined ? [] : [sql`r.state = ${filter.state}`]),
      ...(filter.workflow === undefined ? [] : [sql`r.workflow_name = ${filter.workflow}`]),
      ...(filter.session === undefined
        ? []
        : [sql`substr(r.target_session_id, 1, ${filter.session.length}) = ${filter.session}`]),
      ...(filter.createdSince === undefined ? [] : [sql`r.created_at >= ${filter.createdSince}`]),
      ...(filter.runId === undefined ? [] : [sql`r.run_id = ${filter.runId}`])
    ])
    const limit = sql.literal(String(boundedLimit(filter.limit)))
    const rows = yield* sql`SELECT ${runColumns} FROM workflow_runs r WHERE ${where}
      ORDER BY r.created_at DESC, r.run_id DESC LIMIT ${limit}`
    return (yield* decodeRuns(rows)).map(toRun)
  }, asStoreFailure("TimelineReads.runs"))

  const stepColumns = sql`run_id, seq, node_id, attempt_id, timeout_ms, outcome, NULL AS output_json,
    ${cut("error")} AS error, ${cut("interrupted")} AS interrupted, started_at, ended_at, runner_host, runner_pid`
  const stepsWhere = (where: Statement.Fragment, order: string, limit: Statement.Fragment) =>
    Effect.map(
      Effect.flatMap(
        sql`SELECT ${stepColumns} FROM workflow_steps WHERE ${where} ORDER BY seq ${sql.literal(order)} LIMIT ${limit}`,
        decodeSteps
      ),
      (rows) => rows.map(toStep)
    )

  const steps = Effect.fn("TimelineReads.steps")(function* (runId: string, after: number, limit: number) {
    const page = paged(
      yield* stepsWhere(sql`run_id = ${runId} AND seq > ${after}`, "ASC", upTo(limit)),
      limit,
      (step) => step.seq
    )
    const before = (yield* stepsWhere(
      sql`run_id = ${runId} AND seq <= ${after}`,
      "DESC",
      upTo(LOOKBACK - 1)
    )).toReversed()
    const attempts = ["", ...page.rows.map((step) => step.attemptId)]
    const waits = yield* decodeWaits(
      yield* sql`SELECT w.request_id, w.attempt_id, ${cut("w.prompt")} AS prompt, w.deadline_at, w.answered_by,
          w.answered_at, q.state, ${cut("q.output_json")} AS answer
        FROM workflow_waits w JOIN workflow_requests q ON q.request_id = w.request_id
        WHERE w.run_id = ${runId} AND ${sql.in("w.attempt_id", attempts)}`
    )
    const reminders = yield* decodeReminders(
      yield* sql`SELECT attempt_id, ordinal, created_at FROM workflow_step_reminders
        WHERE run_id = ${runId} AND ${sql.in("attempt_id", attempts)} ORDER BY created_at, ordinal`
    )
    return { ...page, before, waits, reminders } satisfies StepPage
  }, asStoreFailure("TimelineReads.steps"))

  const intents = Effect.fn("TimelineReads.intents")(function* (
    runId: string,
    after: IntentCursor | null,
    limit: number
  ) {
    const from =
      after === null
        ? sql`1 = 1`
        : sql`(requested_at > ${after[0]} OR (requested_at = ${after[0]} AND intent_id > ${after[1]}))`
    const rows = yield* sql`SELECT * FROM workflow_turn_intents WHERE run_id = ${runId} AND ${from}
      ORDER BY requested_at, intent_id LIMIT ${upTo(limit)}`
    const found: ReadonlyArray<TurnIntent> = yield* decodeIntents("TimelineReads.intents")(rows)
    return paged(found, limit, (intent): IntentCursor => [intent.requestedAt, intent.intentId])
  }, asStoreFailure("TimelineReads.intents"))

  // A run event's message is at most 4,096 characters and its facts 64 KiB (CHECK constraints).
  const events = Effect.fn("TimelineReads.events")(function* (runId: string, after: number, limit: number) {
    const rows = yield* sql`SELECT * FROM workflow_run_events WHERE run_id = ${runId} AND seq > ${after}
      ORDER BY seq LIMIT ${upTo(limit)}`
    const found: ReadonlyArray<RunEvent> = (yield* decodeRunEvents(rows)).map(toRunEvent)
    return paged(found, limit, (event) => event.seq)
  }, asStoreFailure("TimelineReads.events"))

  return { runs, steps, intents, events }
}

/** The reads over the client in context. */
export const TimelineReads = Effect.map(SqlClient.SqlClient, make)
