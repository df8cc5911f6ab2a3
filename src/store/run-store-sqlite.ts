/**
 * RunStore on the controller SQLite database. Runner writes run inside `Database.immediate`
 * (BEGIN IMMEDIATE) and start by checking the caller's claim token, so a write either happens
 * under a claim that is still held or not at all. Lease renewal is a single conditional UPDATE.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Layer, Option } from "effect"
import { StoreFailure } from "../domain/errors.ts"
import { Database, type DatabaseOptions, type OpenError } from "./database.ts"
import { asStoreFailure } from "./store-errors.ts"
import { makeRunReads } from "./run-reads.ts"
import { ClaimLost, ClaimRefused, RequestNotOpen, ReservationConflict } from "./run-errors.ts"
import {
  decodeFlags,
  decodeRequests,
  decodeRuns,
  decodeSteps,
  decodeRunEvents,
  decodeToken,
  toRequest,
  toRunEvent,
  toStep
} from "./run-rows.ts"
import { type Fence, isTerminal, RunStore, type RunStoreService } from "./run-store.ts"

const iso = (millis: number) => new Date(millis).toISOString()
const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const db = yield* Database
  const reads = makeRunReads(sql)
  const { runsWhere, requireRun } = reads

  /** Inside one immediate transaction: verify the claim, then run `body`. */
  const fenced = <A, E, R>(operation: string, fence: Fence, body: Effect.Effect<A, E, R>) =>
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

  /** A row the fence just proved present: its absence is a store fault, not a domain error. */
  const fencedRun = (runId: string) =>
    Effect.catchTag(requireRun(runId), "RunNotFound", (error) =>
      Effect.fail(new StoreFailure({ operation: "read", message: error.message }))
    )

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
      const rows = yield* sql`UPDATE workflow_runs SET claim_expires_at = ${now + leaseMs}
          WHERE run_id = ${fence.runId} AND claim_token = ${fence.token}
          RETURNING pause_requested, cancel_requested`.pipe(Effect.flatMap(decodeFlags))
      const row = rows[0]
      if (row === undefined) return yield* new ClaimLost({ runId: fence.runId, operation: "renew" })
      return { pauseRequested: row.pause_requested === 1, cancelRequested: row.cancel_requested }
    }).pipe(asStoreFailure("renew"))

  const startStep: RunStoreService["startStep"] = (fence, input) =>
    fenced(
      "startStep",
      fence,
      Effect.gen(function* () {
        const now = iso(yield* Clock.currentTimeMillis)
        const rows = yield* sql`INSERT INTO workflow_steps (run_id, seq, node_id, attempt_id, started_at)
            VALUES (${fence.runId},
              (SELECT coalesce(max(seq), 0) + 1 FROM workflow_steps WHERE run_id = ${fence.runId}),
              ${input.nodeId}, ${input.attemptId}, ${now})
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
      const rows = yield* sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
          abort_attempt_id = ${p.attemptId}, abort_interruption = ${p.interruption}, abort_pending = 1,
          interruptions = max(interruptions, ${p.interruption + 1}), updated_at = ${now}
        WHERE run_id = ${fence.runId} AND claim_token = ${fence.token}
        RETURNING run_id`
      if (rows.length === 0)
        return yield* new ClaimLost({ runId: fence.runId, operation: "recordInterruption" })
    }).pipe(asStoreFailure("recordInterruption"))

  const recordHandoff: RunStoreService["recordHandoff"] = (runId, p) =>
    Effect.gen(function* () {
      const now = iso(yield* Clock.currentTimeMillis)
      const rows = yield* sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
          abort_attempt_id = ${p.attemptId}, abort_interruption = ${p.interruption}, abort_pending = 1,
          interruptions = max(interruptions, ${p.interruption + 1}), updated_at = ${now}
        WHERE run_id = ${runId} AND abort_pending = 0
          AND state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')
        RETURNING run_id`
      const run = yield* requireRun(runId)
      if (rows.length > 0) return { _tag: "Recorded", run } as const
      return isTerminal(run.state) ? ({ _tag: "Ended", run } as const) : ({ _tag: "Kept", run } as const)
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

  const settle: RunStoreService["settle"] = (fence, s) =>
    fenced(
      "settle",
      fence,
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
            // A run never ends with a request still open.
            yield* sql`UPDATE workflow_requests SET state = 'closed', closed_reason = ${`run ${t.state}`},
                ended_at = ${now} WHERE run_id = ${fence.runId} AND state = 'open'`
            yield* sql`UPDATE workflow_runs SET state = ${t.state}, result_json = ${json(t.result)},
                error_json = ${json(t.error)}, ended_at = ${now}, updated_at = ${now}, claim_token = NULL,
                claim_expires_at = NULL, pause_requested = 0, cancel_requested = NULL, parked_reason = NULL
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
        return yield* fencedRun(fence.runId)
      })
    )

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
          yield* sql`UPDATE workflow_runs SET state = 'cancelled', error_json = ${JSON.stringify(error)},
              ended_at = ${at}, updated_at = ${at}, claim_token = NULL, claim_expires_at = NULL,
              pause_requested = 0, cancel_requested = NULL, parked_reason = NULL
            WHERE run_id = ${runId}`
          return { _tag: "Cancelled", run: yield* requireRun(runId) } as const
        })
      )
      .pipe(asStoreFailure("cancel"))

  return RunStore.of({
    reserve,
    nextQueued: reads.nextQueued,
    claim,
    renew,
    startStep,
    openRequest,
    recordInterruption,
    recordHandoff,
    clearInterruption,
    submit,
    settle,
    requestPause,
    withdrawPause,
    cancel,
    recordEvent,
    events: reads.events,
    get: reads.get,
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
