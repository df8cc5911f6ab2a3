/**
 * The runner's writes under its claim. Each checks the caller's claim token first, inside one
 * `Database.immediate` (BEGIN IMMEDIATE), or as a condition of its single UPDATE, so a write
 * either happens under a claim that is still held or not at all.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect } from "effect"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"
import { clearAnsweredAbort } from "./answered-abort.ts"
import { type DatabaseService, waitingForLocks } from "./database.ts"
import type { makeRunReads } from "./run-reads.ts"
import { ClaimLost, RequestNotOpen } from "./run-errors.ts"
import { decodeRequests, decodeSteps, decodeToken, toRequest, toStep } from "./run-rows.ts"
import type { EndKind, Fence, RunStoreService, RunTransition, TerminalRunState } from "./run-store.ts"

export type RunReads = ReturnType<typeof makeRunReads>

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
export const presentRun = (reads: RunReads) => (runId: string) =>
  Effect.catchTag(reads.requireRun(runId), "RunNotFound", (error) =>
    Effect.fail(new StoreFailure({ operation: "read", message: error.message }))
  )

export const makeFencedWrites = (
  sql: SqlClient.SqlClient,
  db: DatabaseService,
  reads: RunReads
): Pick<
  RunStoreService,
  "startStep" | "openRequest" | "recordInterruption" | "clearInterruption" | "submit" | "settle"
> => {
  const fencedRun = presentRun(reads)

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
      const rows = yield* waitingForLocks(
        db
      )(sql`UPDATE workflow_runs SET abort_cause = ${p.cause}, abort_node_id = ${p.nodeId},
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
        return yield* fencedRun(fence.runId)
      })
    )

  return { startStep, openRequest, recordInterruption, clearInterruption, submit, settle }
}
