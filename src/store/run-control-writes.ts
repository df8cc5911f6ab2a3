/**
 * The run store's control writes, made for someone other than the claim holder: an abort's
 * handoff, a run event, pause and its withdrawal, cancel. Each decides on the run as it is
 * inside one `Database.immediate` (or one conditional UPDATE), so it never acts on a stale view.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Option } from "effect"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"
import { clearAnsweredAbort } from "./answered-abort.ts"
import { type DatabaseService, waitingForLocks } from "./database.ts"
import { iso, type RunReads } from "./run-fenced-writes.ts"
import { decodeRunEvents, toRunEvent } from "./run-rows.ts"
import { isTerminal, type RunStoreService } from "./run-store.ts"

export const makeControlWrites = (
  sql: SqlClient.SqlClient,
  db: DatabaseService,
  reads: RunReads
): Pick<RunStoreService, "recordHandoff" | "recordEvent" | "requestPause" | "withdrawPause" | "cancel"> => {
  const { requireRun } = reads
  const lockWait = waitingForLocks(db)

  // A request of the run at a later step than the aborted attempt: the new owner built and sent
  // (or is sending) its own prompt after the claim changed.
  const laterRequest = (runId: string, attemptId: string | null) =>
    sql`SELECT 1 FROM workflow_requests q JOIN workflow_steps s ON s.attempt_id = q.attempt_id
        WHERE q.run_id = ${runId}
          AND s.seq > (SELECT a.seq FROM workflow_steps a WHERE a.attempt_id = ${attemptId})`

  const recordHandoff: RunStoreService["recordHandoff"] = (runId, p, options) =>
    Effect.gen(function* () {
      const now = iso(yield* Clock.currentTimeMillis)
      const unless = options?.unlessSuperseded === true ? 1 : 0
      // An abort a prompt answered is not outstanding: the handoff's own is recorded instead.
      yield* lockWait(clearAnsweredAbort(sql, runId))
      const rows =
        yield* lockWait(sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
          abort_attempt_id = ${p.attemptId}, abort_interruption = ${p.interruption}, abort_pending = 1,
          interruptions = max(interruptions, ${p.interruption + 1}), updated_at = ${now}
        WHERE run_id = ${runId} AND abort_pending = 0
          AND state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')
          AND NOT (${unless} = 1 AND EXISTS (${laterRequest(runId, p.attemptId)}))
        RETURNING run_id`)
      const run = yield* requireRun(runId)
      if (rows.length > 0) return { _tag: "Recorded", run } as const
      if (isTerminal(run.state)) return { _tag: "Ended", run } as const
      // A later request never goes away: one that kept the row as it was is still there.
      const later =
        unless === 1 &&
        (yield* sql`SELECT 1 AS later WHERE EXISTS (${laterRequest(runId, p.attemptId)})`).length > 0
      return later ? ({ _tag: "Superseded", run } as const) : ({ _tag: "Kept", run } as const)
    }).pipe(asStoreFailure("recordHandoff"))

  const recordEvent: RunStoreService["recordEvent"] = (runId, event) =>
    db
      .immediate(
        Effect.gen(function* () {
          yield* requireRun(runId)
          const now = iso(yield* Clock.currentTimeMillis)
          const rows = yield* sql`INSERT INTO workflow_run_events (run_id, seq, kind, message, created_at)
              VALUES (${runId},
                (SELECT coalesce(max(seq), 0) + 1 FROM workflow_run_events WHERE run_id = ${runId}),
                ${event.kind}, ${event.message.slice(0, 4_096)}, ${now})
              RETURNING *`.pipe(Effect.flatMap(decodeRunEvents))
          const row = rows[0]
          if (row === undefined)
            return yield* new StoreFailure({ operation: "recordEvent", message: "no row" })
          return toRunEvent(row)
        })
      )
      .pipe(asStoreFailure("recordEvent"))

  const requestPause: RunStoreService["requestPause"] = (runId) =>
    db
      .immediate(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const run = yield* requireRun(runId)
          if (isTerminal(run.state) || run.state === "queued") return { _tag: "Refused", run } as const
          if (run.state === "waiting") return { _tag: "Held", run } as const
          if (run.claimToken !== null && (run.claimExpiresAt ?? 0) > now) {
            yield* sql`UPDATE workflow_runs SET pause_requested = 1, updated_at = ${iso(now)}
              WHERE run_id = ${runId}`
            return { _tag: "Requested", run: yield* requireRun(runId) } as const
          }
          yield* sql`UPDATE workflow_runs SET state = 'waiting', pause_requested = 0, claim_token = NULL,
              claim_expires_at = NULL, updated_at = ${iso(now)} WHERE run_id = ${runId}`
          return { _tag: "Held", run: yield* requireRun(runId) } as const
        })
      )
      .pipe(asStoreFailure("requestPause"))

  const withdrawPause: RunStoreService["withdrawPause"] = (runId) =>
    db
      .immediate(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const run = yield* requireRun(runId)
          if (run.state !== "running" || !run.pauseRequested) return Option.none()
          yield* sql`UPDATE workflow_runs SET pause_requested = 0, updated_at = ${iso(now)} WHERE run_id = ${runId}`
          return Option.some(yield* requireRun(runId))
        })
      )
      .pipe(asStoreFailure("withdrawPause"))

  const cancel: RunStoreService["cancel"] = (runId, by) =>
    db
      .immediate(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const at = iso(now)
          // An abort a prompt answered is not the one this cancel reuses (an ended row is kept).
          yield* clearAnsweredAbort(sql, runId)
          const run = yield* requireRun(runId)
          if (isTerminal(run.state)) return { _tag: "Refused", run } as const
          if (run.claimToken !== null && (run.claimExpiresAt ?? 0) > now) {
            yield* sql`UPDATE workflow_runs SET cancel_requested = ${by}, updated_at = ${at} WHERE run_id = ${runId}`
            return { _tag: "Requested", run: yield* requireRun(runId) } as const
          }
          const error = { message: `cancelled by the ${by}`, nodeId: run.currentNodeId, original: null }
          // The agent's cancel owes the run's terminal turn: its provenance goes on the row in the
          // same transaction (an outstanding abort of the run is kept and reused instead), so
          // reconciliation finds the debt after a crash.
          if (by === "agent" && !run.abortPending) {
            yield* sql`UPDATE workflow_runs SET abort_cause = 'agentCancelled',
                abort_node_id = ${run.currentNodeId}, abort_attempt_id = ${run.currentAttemptId},
                abort_interruption = ${run.interruptions}, abort_pending = 1,
                interruptions = ${run.interruptions + 1}
              WHERE run_id = ${runId}`
          }
          yield* sql`UPDATE workflow_requests SET state = 'closed', closed_reason = 'cancelled', ended_at = ${at}
            WHERE run_id = ${runId} AND state = 'open'`
          yield* sql`UPDATE workflow_steps SET outcome = 'cancelled', ended_at = ${at}
            WHERE run_id = ${runId} AND outcome IS NULL AND interrupted IS NULL`
          // The cancelled row keeps who cancelled it (`cancel_requested`, `end_by`).
          yield* sql`UPDATE workflow_runs SET state = 'cancelled', error_json = ${JSON.stringify(error)},
              ended_at = ${at}, updated_at = ${at}, claim_token = NULL, claim_expires_at = NULL,
              pause_requested = 0, cancel_requested = ${by}, parked_reason = NULL,
              end_kind = 'cancelled', end_by = ${by}, end_node_id = ${run.currentNodeId},
              end_attempt_id = ${run.currentAttemptId}
            WHERE run_id = ${runId}`
          return { _tag: "Cancelled", run: yield* requireRun(runId) } as const
        })
      )
      .pipe(asStoreFailure("cancel"))

  return { recordHandoff, recordEvent, requestPause, withdrawPause, cancel }
}
