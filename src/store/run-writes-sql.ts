/**
 * RunStore's writes (`run-store-sql.ts` assembles the store). The runner's writes under its
 * claim check the token first, inside one `Database.immediate` (BEGIN IMMEDIATE) or as a
 * condition of their single UPDATE, so they happen under a claim still held or not at all. The
 * control writes for others (an abort's handoff, pause, cancel) decide on the run
 * as it is inside one transaction (or one conditional UPDATE), never on a stale view.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Option } from "effect"
import { type DatabaseService, waitingForLocks } from "./database.ts"
import { decodeRequests, decodeSteps, decodeToken, toRequest, toStep } from "./run-rows.ts"
import {
  ClaimLost,
  type Fence,
  isTerminal,
  RequestNotOpen,
  type RunNotFound,
  type RunRecord,
  type RunStoreService,
  type RunTransition,
  type Settlement,
  type TerminalRunState
} from "./run-store.ts"
import type { EndKind } from "./run-end.ts"
import { asStoreFailure, type InfraError, StoreFailure } from "./store-errors.ts"

/**
 * An answered abort: the row still says an abort is pending (`abort_pending = 1`), but a
 * workflow prompt (or a waiting checkpoint's presentation: the run has not ended, so no completed
 * run's presentation) already resolved that abort's intent. The runner
 * that sent the prompt clears the row right after the send; if it died, lost its claim or its
 * clear failed first, the run's end would reuse the resolved intent and get no terminal turn. So
 * every write that takes the row's pending abort as outstanding (a claim: the new owner's memory
 * is read from the row; a run's end, a cancel, a handoff) first clears an answered one, in the
 * same transaction or as its own idempotent statement: a resolved intent stays resolved.
 *
 * The intent is found by the fields its identity derives from (run, cause, node, attempt): one
 * attempt's turn is aborted at most once per cause. An ended row is never touched (what it owes
 * is settled; reconciliation reads answered aborts itself, `run-debts.ts`). Portable SQL:
 * null-safe equality via `coalesce`, IDs are never empty.
 */
export const clearAnsweredAbort = (sql: SqlClient.SqlClient, runId: string) =>
  sql`UPDATE workflow_runs SET abort_pending = 0
    WHERE run_id = ${runId} AND abort_pending = 1
      AND state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')
      AND EXISTS (SELECT 1 FROM workflow_turn_intents i
        WHERE i.run_id = workflow_runs.run_id AND i.cause = workflow_runs.abort_cause
          AND coalesce(i.node_id, '') = coalesce(workflow_runs.abort_node_id, '')
          AND coalesce(i.attempt_id, '') = coalesce(workflow_runs.abort_attempt_id, '')
          AND i.resolution IN ('workflowPrompt', 'presentation'))`

/** A run as it is now, read inside the caller's transaction (`run-store-sql.ts`). */
export type RequireRun = (runId: string) => Effect.Effect<RunRecord, RunNotFound | InfraError>

export const iso = (millis: number) => new Date(millis).toISOString()
const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))

/** The kind of an end that states none: its state's own. */
const PLAIN_KIND: Record<TerminalRunState, EndKind> = {
  completed: "completed",
  failed: "failed",
  timed_out: "timedOut",
  cancelled: "cancelled"
}

/** A row the fence just proved present: its absence is a store fault, not a domain error. */
export const presentRun = (requireRun: RequireRun) => (runId: string) =>
  Effect.catchTag(requireRun(runId), "RunNotFound", (error) =>
    Effect.fail(new StoreFailure({ operation: "read", message: error.message }))
  )

/** Inside one immediate transaction: verify the claim, then run `body`. */
export const fencedIn =
  (sql: SqlClient.SqlClient, db: DatabaseService) =>
  <A, E, R>(operation: string, fence: Fence, body: Effect.Effect<A, E, R>) =>
    db
      .immediate(
        Effect.gen(function* () {
          const rows = yield* sql`SELECT claim_token FROM workflow_runs WHERE run_id = ${fence.runId}`.pipe(
            Effect.flatMap(decodeToken)
          )
          if (rows[0]?.claim_token !== fence.token) {
            return yield* new ClaimLost({ runId: fence.runId, operation })
          }
          return yield* body
        })
      )
      .pipe(asStoreFailure(operation))

export const makeFencedWrites = (
  sql: SqlClient.SqlClient,
  db: DatabaseService,
  requireRun: RequireRun
): Pick<
  RunStoreService,
  "startStep" | "openRequest" | "recordInterruption" | "clearInterruption" | "submit" | "settle" | "advance"
> => {
  const fencedRun = presentRun(requireRun)
  const lockWait = waitingForLocks(db)
  const fenced = fencedIn(sql, db)

  const startStep: RunStoreService["startStep"] = (fence, input) =>
    fenced(
      "startStep",
      fence,
      Effect.gen(function* () {
        const now = iso(yield* Clock.currentTimeMillis)
        const rows = yield* sql`INSERT INTO workflow_steps
              (run_id, seq, node_id, attempt_id, started_at, runner_host, runner_pid)
            VALUES (${fence.runId},
              (SELECT coalesce(max(seq), 0) + 1 FROM workflow_steps WHERE run_id = ${fence.runId}),
              ${input.nodeId}, ${input.attemptId}, ${now},
              ${input.runner?.host ?? null}, ${input.runner?.pid ?? null})
            RETURNING *`.pipe(Effect.flatMap(decodeSteps))
        yield* sql`UPDATE workflow_runs SET current_node_id = ${input.nodeId},
            current_attempt_id = ${input.attemptId}, updated_at = ${now}
          WHERE run_id = ${fence.runId}`
        const step = rows[0]
        if (step === undefined) return yield* new StoreFailure({ operation: "startStep", message: "no row" })
        return toStep(step)
      })
    )

  const openRequest: RunStoreService["openRequest"] = (fence, input) =>
    fenced(
      "openRequest",
      fence,
      Effect.gen(function* () {
        const now = iso(yield* Clock.currentTimeMillis)
        const rows = yield* sql`INSERT INTO workflow_requests (request_id, run_id, node_id, attempt_id, state,
              opened_at)
            VALUES (${input.requestId}, ${fence.runId}, ${input.nodeId}, ${input.attemptId}, 'open', ${now})
            RETURNING *`.pipe(Effect.flatMap(decodeRequests))
        const request = rows[0]
        if (request === undefined)
          return yield* new StoreFailure({ operation: "openRequest", message: "no row" })
        return toRequest(request)
      })
    )

  // The abort-time writes are single conditional statements, not transactions: a transaction
  // holds the only connection while it waits for another process's lock, and the abort's
  // intent persist must not queue behind it.
  const recordInterruption: RunStoreService["recordInterruption"] = (fence, p) =>
    Effect.gen(function* () {
      const now = iso(yield* Clock.currentTimeMillis)
      const rows =
        yield* lockWait(sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
          abort_attempt_id = ${p.attemptId}, abort_interruption = ${p.interruption}, abort_pending = 1,
          interruptions = max(interruptions, ${p.interruption + 1}), updated_at = ${now}
        WHERE run_id = ${fence.runId} AND claim_token = ${fence.token}
        RETURNING run_id`)
      if (rows.length === 0)
        return yield* new ClaimLost({ runId: fence.runId, operation: "recordInterruption" })
    }).pipe(asStoreFailure("recordInterruption"))

  const clearInterruption: RunStoreService["clearInterruption"] = (fence) =>
    fenced(
      "clearInterruption",
      fence,
      sql`UPDATE workflow_runs SET abort_pending = 0 WHERE run_id = ${fence.runId}`
    )

  const submit: RunStoreService["submit"] = (fence, input) =>
    fenced(
      "submit",
      fence,
      Effect.gen(function* () {
        const now = iso(yield* Clock.currentTimeMillis)
        const rows = yield* sql`UPDATE workflow_requests SET state = 'submitted',
              output_json = ${JSON.stringify(input.output)}, receipt_json = ${JSON.stringify(input.receipt)},
              ended_at = ${now}
            WHERE request_id = ${input.requestId} AND run_id = ${fence.runId} AND state = 'open'
            RETURNING *`.pipe(Effect.flatMap(decodeRequests))
        const request = rows[0]
        if (request === undefined) return yield* new RequestNotOpen({ requestId: input.requestId })
        yield* sql`UPDATE workflow_steps SET outcome = 'ok', output_json = ${JSON.stringify(input.output)},
            timeout_ms = ${input.timeoutMs}, ended_at = ${now}
          WHERE attempt_id = ${request.attempt_id} AND outcome IS NULL AND interrupted IS NULL`
        return toRequest(request)
      })
    )

  type End = Extract<RunTransition, { readonly _tag: "End" }>
  /** Who cancelled a cancelled run: the end's facts, else `cancelledBy`; undefined when neither says. */
  const canceller = (end: End) =>
    end.end?.by === "agent" || end.end?.by === "user" ? end.end.by : end.cancelledBy

  // A cancelled run keeps who cancelled it; any other end clears a cancel request it overtook.
  const cancelRequested = (end: End) => {
    if (end.state !== "cancelled") return sql`NULL`
    const by = canceller(end)
    return by === undefined ? sql`cancel_requested` : sql`${by}`
  }

  // The end's facts as the ending states them, or the state's plain kind (see `RunTransition`).
  const endColumns = (end: End) => {
    const facts = end.end
    const by = canceller(end)
    const endBy =
      facts !== undefined
        ? sql`${facts.by}`
        : end.state !== "cancelled"
          ? sql`'engine'`
          : by === undefined
            ? sql`coalesce(cancel_requested, 'user')`
            : sql`${by}`
    return sql`end_kind = ${facts?.kind ?? PLAIN_KIND[end.state]}, end_by = ${endBy},
      end_node_id = ${facts === undefined ? sql`current_node_id` : sql`${facts.nodeId}`},
      end_attempt_id = ${facts === undefined ? sql`current_attempt_id` : sql`${facts.attemptId}`}`
  }

  /** A settlement's writes, inside the caller's fenced transaction. */
  const settleWrites = (fence: Fence, s: Settlement) =>
    Effect.gen(function* () {
      const now = iso(yield* Clock.currentTimeMillis)
      const open = sql`outcome IS NULL AND interrupted IS NULL`
      if (s.attemptId !== undefined && s.step !== undefined) {
        const step = s.step
        yield* step._tag === "Outcome"
          ? sql`UPDATE workflow_steps SET outcome = ${step.outcome}, output_json = ${json(step.output)},
              error = ${step.error ?? null}, timeout_ms = ${step.timeoutMs}, ended_at = ${now}
            WHERE attempt_id = ${s.attemptId} AND run_id = ${fence.runId} AND ${open}`
          : sql`UPDATE workflow_steps SET interrupted = ${step.reason}, ended_at = ${now}
            WHERE attempt_id = ${s.attemptId} AND run_id = ${fence.runId} AND ${open}`
      }
      if (s.attemptId !== undefined && s.closeRequest !== undefined) {
        yield* sql`UPDATE workflow_requests SET state = 'closed', closed_reason = ${s.closeRequest},
          ended_at = ${now}
        WHERE attempt_id = ${s.attemptId} AND state = 'open'`
      }
      const t = s.next
      switch (t._tag) {
        case "Continue":
          yield* sql`UPDATE workflow_runs SET current_node_id = ${t.nodeId}, current_attempt_id = NULL,
            updated_at = ${now} WHERE run_id = ${fence.runId}`
          break
        case "End":
          if (t.answered !== undefined) {
            const p = t.answered
            yield* sql`UPDATE workflow_runs SET abort_pending = 0
            WHERE run_id = ${fence.runId} AND abort_pending = 1 AND abort_cause = ${p.cause}
              AND abort_interruption = ${p.interruption}`
          }
          if (t.abort !== undefined) {
            const p = t.abort
            yield* sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
              abort_attempt_id = ${p.attemptId}, abort_interruption = ${p.interruption}, abort_pending = 1,
              interruptions = max(interruptions, ${p.interruption + 1})
            WHERE run_id = ${fence.runId} AND abort_pending = 0`
          }
          // Last: the runner's own abort (above) may be one a prompt answered before a crash.
          yield* clearAnsweredAbort(sql, fence.runId)
          // A run never ends with a request still open.
          yield* sql`UPDATE workflow_requests SET state = 'closed', closed_reason = ${`run ${t.state}`},
            ended_at = ${now} WHERE run_id = ${fence.runId} AND state = 'open'`
          yield* sql`UPDATE workflow_runs SET state = ${t.state}, result_json = ${json(t.result)},
            error_json = ${json(t.error)}, ended_at = ${now}, updated_at = ${now}, claim_token = NULL,
            claim_expires_at = NULL, pause_requested = 0, cancel_requested = ${cancelRequested(t)},
            parked_reason = NULL, ${endColumns(t)}
          WHERE run_id = ${fence.runId}`
          break
        case "Park":
          yield* sql`UPDATE workflow_runs SET parked_reason = ${t.reason}, claim_token = NULL,
            claim_expires_at = NULL, updated_at = ${now} WHERE run_id = ${fence.runId}`
          break
        case "Hold":
          yield* sql`UPDATE workflow_runs SET state = 'waiting', pause_requested = 0, claim_token = NULL,
            claim_expires_at = NULL, updated_at = ${now} WHERE run_id = ${fence.runId}`
          break
      }
    })

  const settle: RunStoreService["settle"] = (fence, s) =>
    fenced("settle", fence, Effect.zipRight(settleWrites(fence, s), fencedRun(fence.runId)))
  // The same writes without reading the run back (a row of the run's size and a count of its steps).
  const advance: RunStoreService["advance"] = (fence, s) => fenced("advance", fence, settleWrites(fence, s))

  return { startStep, openRequest, recordInterruption, clearInterruption, submit, settle, advance }
}

// --- Control writes (no claim) ------------------------------------------------------------------

export const makeControlWrites = (
  sql: SqlClient.SqlClient,
  db: DatabaseService,
  requireRun: RequireRun
): Pick<RunStoreService, "recordHandoff" | "requestPause" | "withdrawPause" | "cancel"> => {
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

  return { recordHandoff, requestPause, withdrawPause, cancel }
}
