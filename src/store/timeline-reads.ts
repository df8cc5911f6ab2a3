/**
 * What the `serve` page reads: bounded, paged statements, the same on SQLite and PostgreSQL. Only
 * the columns a view shows are read (never a run's definition snapshot or input, nor a step's
 * output), long texts are cut in SQL to `TEXT_READ` characters (the view redacts them and shows
 * far fewer), and every page is `limit` rows after a cursor, one more row telling whether there
 * is a next page. Rows are decoded with Schema before any column is read.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { AdoptionFacts, RunState } from "./run-store.ts"
import { asStoreFailure } from "./store-errors.ts"

/** Characters of a stored text read at most; the view shows a few hundred, so a cut is never shown. */
export const TEXT_READ = 4_000
/** The most rows one timeline page reads. */
export const MAX_PAGE = 500
/** Steps read before a page, for the deadline of a visit a takeover continued across the page start. */
const LOOKBACK = 8

const Text = Schema.NullOr(Schema.String)
const Millis = Schema.NullOr(Schema.Number)
// A count is a bigint on PostgreSQL: the driver gives it as a number, a bigint one as text.
const Count = Schema.Union(Schema.Number, Schema.NumberFromString)
const Flag = Schema.Literal(0, 1)

const RunRow = Schema.Struct({
  run_id: Schema.String,
  workflow_name: Schema.String,
  target_session_id: Schema.String,
  state: RunState,
  current_node_id: Text,
  current_attempt_id: Text,
  max_steps: Schema.Number,
  error_text: Text,
  end_kind: Text,
  end_by: Text,
  pause_requested: Flag,
  cancel_requested: Schema.NullOr(Schema.Literal("agent", "user")),
  parked_reason: Text,
  abort_cause: Text,
  abort_node_id: Text,
  abort_pending: Flag,
  claim_token: Text,
  claim_expires_at: Millis,
  claims: Count,
  open_request_id: Text,
  wait_request_id: Text,
  step_count: Count,
  reminders: Count,
  created_at: Schema.String,
  updated_at: Schema.String,
  started_at: Text,
  ended_at: Text
})
export type RunSummary = typeof RunRow.Type

const StepRow = Schema.Struct({
  seq: Schema.Number,
  node_id: Schema.String,
  attempt_id: Schema.String,
  timeout_ms: Millis,
  outcome: Text,
  error: Text,
  interrupted: Text,
  started_at: Schema.String,
  ended_at: Text
})
export type StepRow = typeof StepRow.Type

const WaitRow = Schema.Struct({
  request_id: Schema.String,
  attempt_id: Schema.String,
  prompt: Schema.String,
  since: Schema.String,
  deadline_at: Millis,
  answered_by: Text,
  answered_at: Text,
  state: Schema.String,
  closed_reason: Text,
  answer: Text
})
export type WaitRow = typeof WaitRow.Type

const ReminderRow = Schema.Struct({
  attempt_id: Schema.String,
  ordinal: Count,
  created_at: Schema.String
})
export type ReminderRow = typeof ReminderRow.Type

const IntentRow = Schema.Struct({
  intent_id: Schema.String,
  cause: Schema.String,
  node_id: Text,
  requested_at: Schema.String,
  eligible_at: Text,
  resolved_at: Text,
  resolution: Text,
  resolution_message_id: Text,
  delivery_claim_token: Text,
  delivery_claim_expires_at: Millis
})
export type IntentRow = typeof IntentRow.Type

const EventRow = Schema.Struct({
  seq: Schema.Number,
  kind: Schema.String,
  message: Schema.String,
  created_at: Schema.String,
  data_json: Text
})
const decodeAdoption = Schema.decodeUnknownOption(Schema.parseJson(AdoptionFacts))
export type EventRow = Omit<typeof EventRow.Type, "data_json"> & { readonly adoption: AdoptionFacts | null }

export interface RunFilter {
  readonly state?: RunState
  readonly workflow?: string
  /** A session ID or a prefix of one. */
  readonly session?: string
  /** Only runs created at or after this ISO time. */
  readonly createdSince?: string
  readonly runIds?: ReadonlyArray<string>
  readonly limit: number
}

/** One page: its rows and the cursor after the last one, null when nothing follows. */
export interface Page<A, C> {
  readonly rows: ReadonlyArray<A>
  readonly next: C | null
}

export interface StepPage extends Page<StepRow, number> {
  /** The steps right before the page (oldest first), for deadlines only. */
  readonly before: ReadonlyArray<StepRow>
  readonly waits: ReadonlyArray<WaitRow>
  readonly reminders: ReadonlyArray<ReminderRow>
}

/** An intent page's cursor: the last row's request time and ID (the listing's order). */
export type IntentCursor = readonly [string, string]

const decode =
  <A, I>(schema: Schema.Schema<A, I>) =>
  (rows: ReadonlyArray<unknown>) =>
    Schema.decodeUnknown(Schema.Array(schema))(rows)

const paged = <A, C>(rows: ReadonlyArray<A>, limit: number, cursorOf: (row: A) => C): Page<A, C> => {
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return { rows: page, next: rows.length > limit && last !== undefined ? cursorOf(last) : null }
}

const bounded = (limit: number) => Math.max(1, Math.min(MAX_PAGE, Math.trunc(limit)))

const make = (sql: SqlClient.SqlClient) => {
  // A row limit is part of the text, validated first (as the stores do).
  const limitOf = (n: number) => sql.literal(String(n))
  const cut = (column: string) => sql.literal(`substr(${column}, 1, ${TEXT_READ})`)

  const runs = Effect.fn("TimelineReads.runs")(function* (filter: RunFilter) {
    const where = sql.and([
      sql`1 = 1`,
      ...(filter.state === undefined ? [] : [sql`r.state = ${filter.state}`]),
      ...(filter.workflow === undefined ? [] : [sql`r.workflow_name = ${filter.workflow}`]),
      ...(filter.session === undefined
        ? []
        : [sql`substr(r.target_session_id, 1, ${filter.session.length}) = ${filter.session}`]),
      ...(filter.createdSince === undefined ? [] : [sql`r.created_at >= ${filter.createdSince}`]),
      ...(filter.runIds === undefined ? [] : [sql.in("r.run_id", [...filter.runIds, ""])])
    ])
    const rows = yield* sql`SELECT r.run_id, r.workflow_name, r.target_session_id, r.state, r.current_node_id,
        r.current_attempt_id, r.max_steps, ${cut("r.error_json")} AS error_text, r.end_kind, r.end_by,
        r.pause_requested, r.cancel_requested, r.parked_reason, r.abort_cause, r.abort_node_id,
        r.abort_pending, r.claim_token, r.claim_expires_at, r.claims, r.created_at, r.updated_at,
        r.started_at, r.ended_at,
        (SELECT q.request_id FROM workflow_requests q WHERE q.run_id = r.run_id AND q.state = 'open')
          AS open_request_id,
        (SELECT q.request_id FROM workflow_requests q JOIN workflow_waits w ON w.request_id = q.request_id
          WHERE q.run_id = r.run_id AND q.state = 'open' AND r.state = 'waiting') AS wait_request_id,
        (SELECT count(*) FROM workflow_steps s WHERE s.run_id = r.run_id AND s.outcome IS NOT NULL)
          AS step_count,
        (SELECT count(*) FROM workflow_step_reminders m
          WHERE m.attempt_id = r.current_attempt_id AND m.ordinal <= 2) AS reminders
      FROM workflow_runs r WHERE ${where}
      ORDER BY r.created_at DESC, r.run_id DESC LIMIT ${limitOf(Math.max(1, Math.min(1_000, filter.limit)))}`
    return yield* decode(RunRow)(rows)
  }, asStoreFailure("TimelineReads.runs"))

  const stepColumns = sql`seq, node_id, attempt_id, timeout_ms, outcome, ${cut("error")} AS error,
    ${cut("interrupted")} AS interrupted, started_at, ended_at`

  const steps = Effect.fn("TimelineReads.steps")(function* (runId: string, after: number, limit: number) {
    const n = bounded(limit)
    const rows = yield* decode(StepRow)(
      yield* sql`SELECT ${stepColumns} FROM workflow_steps WHERE run_id = ${runId} AND seq > ${after}
        ORDER BY seq LIMIT ${limitOf(n + 1)}`
    )
    const page = paged(rows, n, (row) => row.seq)
    const before =
      after <= 0
        ? []
        : (yield* decode(StepRow)(
            yield* sql`SELECT ${stepColumns} FROM workflow_steps WHERE run_id = ${runId} AND seq <= ${after}
              ORDER BY seq DESC LIMIT ${limitOf(LOOKBACK)}`
          )).toReversed()
    const attempts = page.rows.map((row) => row.attempt_id)
    if (attempts.length === 0) return { ...page, before, waits: [], reminders: [] } satisfies StepPage
    const waits = yield* decode(WaitRow)(
      yield* sql`SELECT w.request_id, w.attempt_id, ${cut("w.prompt")} AS prompt, w.since, w.deadline_at,
          w.answered_by, w.answered_at, q.state, q.closed_reason, ${cut("q.output_json")} AS answer
        FROM workflow_waits w JOIN workflow_requests q ON q.request_id = w.request_id
        WHERE w.run_id = ${runId} AND ${sql.in("w.attempt_id", attempts)}`
    )
    const reminders = yield* decode(ReminderRow)(
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
    const n = bounded(limit)
    const from =
      after === null
        ? sql`1 = 1`
        : sql`(requested_at > ${after[0]} OR (requested_at = ${after[0]} AND intent_id > ${after[1]}))`
    const rows = yield* decode(IntentRow)(
      yield* sql`SELECT intent_id, cause, node_id, requested_at, eligible_at, resolved_at, resolution,
          ${cut("resolution_message_id")} AS resolution_message_id, delivery_claim_token,
          delivery_claim_expires_at
        FROM workflow_turn_intents WHERE run_id = ${runId} AND ${from}
        ORDER BY requested_at, intent_id LIMIT ${limitOf(n + 1)}`
    )
    return paged(rows, n, (row): IntentCursor => [row.requested_at, row.intent_id])
  }, asStoreFailure("TimelineReads.intents"))

  const events = Effect.fn("TimelineReads.events")(function* (runId: string, after: number, limit: number) {
    const n = bounded(limit)
    const rows = yield* decode(EventRow)(
      yield* sql`SELECT seq, kind, ${cut("message")} AS message, created_at, data_json FROM workflow_run_events
        WHERE run_id = ${runId} AND seq > ${after} ORDER BY seq LIMIT ${limitOf(n + 1)}`
    )
    const page = paged(rows, n, (row) => row.seq)
    return {
      next: page.next,
      rows: page.rows.map(
        ({ data_json, ...row }): EventRow => ({
          ...row,
          adoption: data_json === null ? null : Option.getOrNull(decodeAdoption(data_json))
        })
      )
    }
  }, asStoreFailure("TimelineReads.events"))

  return { runs, steps, intents, events }
}

export type TimelineReadsService = ReturnType<typeof make>

/** The reads over the client in context. */
export const TimelineReads = Effect.map(SqlClient.SqlClient, make)
