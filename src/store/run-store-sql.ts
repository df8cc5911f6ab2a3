/**
 * RunStore on the controller database (SQLite, or PostgreSQL through the same SqlClient): the
 * queue (reservation, claims, lease renewal), the reads and run events here; the writes on a
 * run's state in `run-writes-sql.ts`. A claim is taken inside `Database.immediate` (BEGIN
 * IMMEDIATE) on the run as it is; lease renewal is a single conditional UPDATE. The reads are
 * plain statements on the shared SqlClient; the writes use `requireRun` inside their
 * transactions. Every operation is a span `RunStore.<operation>`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import { Clock, Effect, Layer, Option } from "effect"
import { Database, type DatabaseOptions, type OpenError, traced, waitingForLocks } from "./database.ts"
import {
  boundedLimit,
  decodeFlags,
  decodeRequests,
  decodeRuns,
  decodeSteps,
  derivedRunColumns,
  toRequest,
  toRun,
  toStep
} from "./run-rows.ts"
import { decodeRunEvents, insertEvent, toRunEvent } from "./run-events-sql.ts"
import {
  ClaimLost,
  ClaimRefused,
  isTerminal,
  ReservationConflict,
  RunNotFound,
  RunStore,
  type RunStoreService
} from "./run-store.ts"
import { makeAdopt, takeOver } from "./run-adopt-sql.ts"
import { makeWaits } from "./run-waits-sql.ts"
import { iso, makeControlWrites, makeFencedWrites, presentRun } from "./run-writes-sql.ts"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"

const makeRunReads = (sql: SqlClient.SqlClient) => {
  const runsWhere = (where: Statement.Fragment) =>
    sql`SELECT r.*,
        (SELECT sn.snapshot_json FROM workflow_run_snapshots sn WHERE sn.run_id = r.run_id) AS snapshot_json,
        ${derivedRunColumns(sql)}
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

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const db = yield* Database
  const reads = makeRunReads(sql)
  const { runsWhere, requireRun } = reads
  const fencedRun = presentRun(requireRun)
  const fencedWrites = makeFencedWrites(sql, db, requireRun)
  const controlWrites = makeControlWrites(sql, db, requireRun)
  const waits = makeWaits(sql, db)

  const checkLease = (leaseMs: number) =>
    Number.isSafeInteger(leaseMs) && leaseMs > 0
      ? Effect.void
      : Effect.fail(new StoreFailure({ operation: "claim", message: `leaseMs must be a positive integer` }))

  const reserve: RunStoreService["reserve"] = (run) =>
    db
      .immediate(
        Effect.gen(function* () {
          const now = iso(yield* Clock.currentTimeMillis)
          const active = yield* runsWhere(
            sql`r.target_session_id = ${run.targetSessionId} AND r.state IN ('queued', 'running', 'waiting')`
          ).pipe(Effect.flatMap(decodeRuns))
          const existing = active[0]
          if (existing !== undefined) {
            return yield* new ReservationConflict({
              sessionId: run.targetSessionId,
              runId: existing.run_id,
              state: existing.state
            })
          }
          yield* sql`INSERT INTO workflow_runs (run_id, workflow_name, workflow_ref, revision, source_fingerprint,
              target_session_id, origin, input_json, state, current_node_id, max_steps, created_at, updated_at)
            VALUES (${run.runId}, ${run.workflowName}, ${run.workflowRef}, ${run.revision},
              ${run.sourceFingerprint}, ${run.targetSessionId}, ${run.origin},
              ${JSON.stringify(run.input)}, 'queued', ${run.startAt}, ${run.maxSteps}, ${now}, ${now})`
          // Its own table, so the run row the steps rewrite stays small (schema version 4).
          yield* sql`INSERT INTO workflow_run_snapshots (run_id, snapshot_json)
            VALUES (${run.runId}, ${JSON.stringify(run.snapshot)})`
          return yield* fencedRun(run.runId)
        })
      )
      .pipe(asStoreFailure("reserve"))

  const claim: RunStoreService["claim"] = (input) =>
    Effect.zipRight(
      checkLease(input.leaseMs),
      db
        .immediate(
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const run = yield* requireRun(input.runId)
            const refuse = (reason: ClaimRefused["reason"]) =>
              new ClaimRefused({ runId: run.runId, state: run.state, reason })
            if (isTerminal(run.state)) return yield* refuse("terminal")
            const live = run.claimToken !== null && (run.claimExpiresAt ?? 0) > now
            const expires = now + input.leaseMs
            if (input.mode === "activate") {
              if (run.state !== "queued") return yield* refuse("notQueued")
              yield* sql`UPDATE workflow_runs SET state = 'running', claim_token = ${input.token},
                  claim_expires_at = ${expires}, claims = claims + 1,
                  started_at = coalesce(started_at, ${iso(now)}), updated_at = ${iso(now)}
                WHERE run_id = ${run.runId}`
            } else {
              if (run.state === "queued") return yield* refuse("queued")
              const takeover = input.takeoverFrom !== undefined && run.claimToken === input.takeoverFrom
              if (live && !takeover) return yield* refuse("held")
              // A waiting checkpoint moves on by its answer or its deadline, never by a resume.
              if (run.waitRequestId !== null) return yield* refuse("waiting")
              yield* takeOver(sql, run.runId, { token: input.token, expires, now })
            }
            return yield* requireRun(run.runId)
          })
        )
        .pipe(asStoreFailure("claim"))
    )

  const renew: RunStoreService["renew"] = (fence, leaseMs) =>
    Effect.gen(function* () {
      yield* checkLease(leaseMs)
      const now = yield* Clock.currentTimeMillis
      const rows = yield* waitingForLocks(db)(sql`UPDATE workflow_runs SET claim_expires_at = ${now + leaseMs}
          WHERE run_id = ${fence.runId} AND claim_token = ${fence.token}
          RETURNING pause_requested, cancel_requested`).pipe(Effect.flatMap(decodeFlags))
      const row = rows[0]
      if (row === undefined) return yield* new ClaimLost({ runId: fence.runId, operation: "renew" })
      return { pauseRequested: row.pause_requested === 1, cancelRequested: row.cancel_requested }
    }).pipe(asStoreFailure("renew"))

  // One conditional statement (no transaction), like the abort-time writes: the step must be open
  // and its run still claimed by the token, or nothing changes and the claim counts as lost.
  const recordLimit: RunStoreService["recordLimit"] = (fence, input) =>
    Effect.gen(function* () {
      const rows = yield* waitingForLocks(db)(sql`UPDATE workflow_steps SET timeout_ms = ${input.timeoutMs}
          WHERE attempt_id = ${input.attemptId} AND run_id = ${fence.runId}
            AND outcome IS NULL AND interrupted IS NULL
            AND EXISTS (SELECT 1 FROM workflow_runs r
              WHERE r.run_id = ${fence.runId} AND r.claim_token = ${fence.token})
          RETURNING attempt_id`)
      if (rows.length === 0) return yield* new ClaimLost({ runId: fence.runId, operation: "recordLimit" })
    }).pipe(asStoreFailure("recordLimit"))

  const recordEvent: RunStoreService["recordEvent"] = (runId, event) =>
    db
      .immediate(
        Effect.gen(function* () {
          yield* requireRun(runId)
          const now = iso(yield* Clock.currentTimeMillis)
          const rows = yield* insertEvent(sql, runId, event, now)
          const row = rows[0]
          if (row === undefined)
            return yield* new StoreFailure({ operation: "recordEvent", message: "no row" })
          return toRunEvent(row)
        })
      )
      .pipe(asStoreFailure("recordEvent"))

  const span = (name: string) => `RunStore.${name}`
  return RunStore.of({
    reserve: traced(span("reserve"), reserve),
    nextQueued: traced(span("nextQueued"), reads.nextQueued),
    claim: traced(span("claim"), claim),
    adopt: traced(span("adopt"), makeAdopt(sql, db, requireRun)),
    renew: traced(span("renew"), renew),
    control: traced(span("control"), reads.control),
    startStep: traced(span("startStep"), fencedWrites.startStep),
    recordLimit: traced(span("recordLimit"), recordLimit),
    openRequest: traced(span("openRequest"), fencedWrites.openRequest),
    recordInterruption: traced(span("recordInterruption"), fencedWrites.recordInterruption),
    recordHandoff: traced(span("recordHandoff"), controlWrites.recordHandoff),
    clearInterruption: traced(span("clearInterruption"), fencedWrites.clearInterruption),
    submit: traced(span("submit"), fencedWrites.submit),
    settle: traced(span("settle"), fencedWrites.settle),
    advance: traced(span("advance"), fencedWrites.advance),
    requestPause: traced(span("requestPause"), controlWrites.requestPause),
    withdrawPause: traced(span("withdrawPause"), controlWrites.withdrawPause),
    cancel: traced(span("cancel"), controlWrites.cancel),
    recordEvent: traced(span("recordEvent"), recordEvent),
    events: traced(span("events"), reads.events),
    get: traced(span("get"), reads.get),
    listBySession: traced(span("listBySession"), reads.listBySession),
    list: traced(span("list"), reads.list),
    steps: traced(span("steps"), reads.steps),
    request: traced(span("request"), reads.request),
    wait: traced(span("wait"), waits.wait),
    answerWait: traced(span("answerWait"), waits.answerWait),
    expireWait: traced(span("expireWait"), waits.expireWait),
    waitOf: traced(span("waitOf"), waits.waitOf),
    waits: traced(span("waits"), waits.waits)
  })
})

/** The store over an already-provided Database + SqlClient. */
export const layer: Layer.Layer<RunStore, never, Database | SqlClient.SqlClient> = Layer.effect(
  RunStore,
  make
)

/** The store and its database on one SQLite file. */
export const layerSqlite = (
  options: DatabaseOptions
): Layer.Layer<RunStore | Database | SqlClient.SqlClient, OpenError> =>
  layer.pipe(Layer.provideMerge(Database.layer(options)))
