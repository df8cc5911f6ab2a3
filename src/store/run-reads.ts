/**
 * The run store's reads: one run (with its open request and step count), the queue's next run,
 * bounded listings, a run's steps and events, one request. Plain statements on the shared
 * SqlClient; the writes in `run-store-sqlite.ts` use `findRun` / `requireRun` inside their
 * transactions.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import { ClaimLost, RunNotFound } from "./run-errors.ts"
import {
  decodeFlags,
  decodeRequests,
  decodeRunEvents,
  decodeRuns,
  decodeSteps,
  toRequest,
  toRun,
  toRunEvent,
  toStep
} from "./run-rows.ts"
import type { RunStoreService } from "./run-store.ts"
import { asStoreFailure } from "./store-errors.ts"

/** A listing's row bound: at least 1, at most 1,000. */
const boundedLimit = (limit: number) => Math.max(1, Math.min(1_000, Math.trunc(limit)))

export const makeRunReads = (sql: SqlClient.SqlClient) => {
  const runsWhere = (where: Statement.Fragment) =>
    sql`SELECT r.*,
        (SELECT q.request_id FROM workflow_requests q WHERE q.run_id = r.run_id AND q.state = 'open')
          AS open_request_id,
        (SELECT count(*) FROM workflow_steps s WHERE s.run_id = r.run_id AND s.outcome IS NOT NULL)
          AS step_count
      FROM workflow_runs r WHERE ${where}`

  const findRun = (runId: string) =>
    runsWhere(sql`r.run_id = ${runId}`).pipe(
      Effect.flatMap(decodeRuns),
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toRun))
    )

  const requireRun = (runId: string) =>
    Effect.flatMap(
      findRun(runId),
      Option.match({ onNone: () => new RunNotFound({ runId }), onSome: Effect.succeed })
    )

  const nextQueued: RunStoreService["nextQueued"] = (sessionId) =>
    sql`${runsWhere(sql`r.target_session_id = ${sessionId} AND r.state = 'queued'`)}
        ORDER BY r.created_at, r.run_id LIMIT 1`.pipe(
      Effect.flatMap(decodeRuns),
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toRun)),
      asStoreFailure("nextQueued")
    )

  const events: RunStoreService["events"] = (runId) =>
    sql`SELECT * FROM workflow_run_events WHERE run_id = ${runId} ORDER BY seq`.pipe(
      Effect.flatMap(decodeRunEvents),
      Effect.map((rows) => rows.map(toRunEvent)),
      asStoreFailure("events")
    )

  const get: RunStoreService["get"] = (runId) => findRun(runId).pipe(asStoreFailure("get"))

  const control: RunStoreService["control"] = (fence) =>
    sql`SELECT pause_requested, cancel_requested FROM workflow_runs
        WHERE run_id = ${fence.runId} AND claim_token = ${fence.token}`.pipe(
      Effect.flatMap(decodeFlags),
      Effect.flatMap((rows) => {
        const row = rows[0]
        return row === undefined
          ? new ClaimLost({ runId: fence.runId, operation: "control" })
          : Effect.succeed({
              pauseRequested: row.pause_requested === 1,
              cancelRequested: row.cancel_requested
            })
      }),
      asStoreFailure("control")
    )

  const listBySession: RunStoreService["listBySession"] = (sessionId, limit) =>
    sql`${runsWhere(sql`r.target_session_id = ${sessionId}`)}
        ORDER BY r.created_at DESC, r.run_id DESC LIMIT ${boundedLimit(limit)}`.pipe(
      Effect.flatMap(decodeRuns),
      Effect.map((rows) => rows.map(toRun)),
      asStoreFailure("listBySession")
    )

  const list: RunStoreService["list"] = (query) =>
    sql`${runsWhere(
      sql.and([
        sql`1 = 1`,
        ...(query.targetSessionId === undefined ? [] : [sql`r.target_session_id = ${query.targetSessionId}`]),
        ...(query.state === undefined ? [] : [sql`r.state = ${query.state}`])
      ])
    )}
        ORDER BY r.created_at DESC, r.run_id DESC LIMIT ${boundedLimit(query.limit)}`.pipe(
      Effect.flatMap(decodeRuns),
      Effect.map((rows) => rows.map(toRun)),
      asStoreFailure("list")
    )

  const steps: RunStoreService["steps"] = (runId) =>
    sql`SELECT * FROM workflow_steps WHERE run_id = ${runId} ORDER BY seq`.pipe(
      Effect.flatMap(decodeSteps),
      Effect.map((rows) => rows.map(toStep)),
      asStoreFailure("steps")
    )

  const request: RunStoreService["request"] = (requestId) =>
    sql`SELECT * FROM workflow_requests WHERE request_id = ${requestId}`.pipe(
      Effect.flatMap(decodeRequests),
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toRequest)),
      asStoreFailure("request")
    )

  return {
    runsWhere,
    findRun,
    requireRun,
    get,
    control,
    nextQueued,
    events,
    listBySession,
    list,
    steps,
    request
  }
}
