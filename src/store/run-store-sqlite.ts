/**
 * RunStore on the controller SQLite database: reservation, claims and lease renewal here; the
 * runner's fenced writes in run-fenced-writes.ts, the control writes in run-control-writes.ts,
 * the reads in run-reads.ts. A claim is taken inside `Database.immediate` (BEGIN IMMEDIATE) on
 * the run as it is; lease renewal is a single conditional UPDATE.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Layer } from "effect"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"
import { clearAnsweredAbort } from "./answered-abort.ts"
import { Database, type DatabaseOptions, type OpenError, waitingForLocks } from "./database.ts"
import { makeControlWrites } from "./run-control-writes.ts"
import { ClaimLost, ClaimRefused, ReservationConflict } from "./run-errors.ts"
import { iso, makeFencedWrites, presentRun } from "./run-fenced-writes.ts"
import { makeRunReads } from "./run-reads.ts"
import { decodeFlags, decodeRuns } from "./run-rows.ts"
import { isTerminal, RunStore, type RunStoreService } from "./run-store.ts"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const db = yield* Database
  const reads = makeRunReads(sql)
  const { runsWhere, requireRun } = reads
  const fencedRun = presentRun(reads)
  const fencedWrites = makeFencedWrites(sql, db, reads)
  const controlWrites = makeControlWrites(sql, db, reads)

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
              snapshot_json, target_session_id, origin, input_json, state, current_node_id, max_steps,
              created_at, updated_at)
            VALUES (${run.runId}, ${run.workflowName}, ${run.workflowRef}, ${run.revision},
              ${run.sourceFingerprint}, ${JSON.stringify(run.snapshot)}, ${run.targetSessionId}, ${run.origin},
              ${JSON.stringify(run.input)}, 'queued', ${run.startAt}, ${run.maxSteps}, ${now}, ${now})`
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
              yield* sql`UPDATE workflow_runs SET state = 'running', claim_token = ${input.token},
                  claim_expires_at = ${expires}, claims = claims + 1, pause_requested = 0,
                  parked_reason = NULL, updated_at = ${iso(now)}
                WHERE run_id = ${run.runId}`
              // The new owner's memory is read from this row: an answered abort is not outstanding.
              yield* clearAnsweredAbort(sql, run.runId)
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

  return RunStore.of({
    reserve,
    nextQueued: reads.nextQueued,
    claim,
    renew,
    ...fencedWrites,
    ...controlWrites,
    events: reads.events,
    get: reads.get,
    control: reads.control,
    listBySession: reads.listBySession,
    list: reads.list,
    steps: reads.steps,
    request: reads.request
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
