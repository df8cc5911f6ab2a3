/**
 * Taking a run over (`RunStore.claim` in `resume` mode) and adopting it for another session
 * (`RunStore.adopt`), on the controller database. An adoption is one `Database.immediate`
 * transaction on the run as it is: the takeover's claim, the run's new target session, its
 * pending turn intents of the old session re-keyed under the new one, its undelivered
 * notifications moved, and the `adopted` event. So no successor the run owes can be delivered
 * to the old session after it, and none is lost: each moves with the run, under the ID the new
 * session derives for the same interruption (`intentId` digests the target session), so a later
 * `ensure` of that interruption for the new session finds it rather than storing a second one.
 * A run at a waiting checkpoint is moved the same way but not claimed: it goes on waiting, now
 * for the new session's answer.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Schema } from "effect"
import { intentId } from "../domain/identity.ts"
import type { DatabaseService } from "./database.ts"
import { insertEvent } from "./run-events-sql.ts"
import { ClaimRefused, isTerminal, ReservationConflict, type RunStoreService } from "./run-store.ts"
import type { AdoptionFacts } from "./run-events.ts"
import { clearAnsweredAbort, iso, type RequireRun } from "./run-writes-sql.ts"
import { asStoreFailure, StoreFailure } from "./store-errors.ts"
import { decodeIntents } from "./turn-intent-store-sql.ts"

/** The takeover's writes on a running (parked or lease-expired) or waiting run, in the caller's transaction. */
export const takeOver = (
  sql: SqlClient.SqlClient,
  runId: string,
  claim: { readonly token: string; readonly expires: number; readonly now: number }
) =>
  Effect.zipRight(
    sql`UPDATE workflow_runs SET state = 'running', claim_token = ${claim.token},
        claim_expires_at = ${claim.expires}, claims = claims + 1, pause_requested = 0,
        parked_reason = NULL, updated_at = ${iso(claim.now)}
      WHERE run_id = ${runId}`,
    // The new owner's memory is read from this row: an answered abort is not outstanding.
    clearAnsweredAbort(sql, runId)
  )

const ActiveRow = Schema.Array(Schema.Struct({ run_id: Schema.String, state: Schema.String }))

export const makeAdopt =
  (sql: SqlClient.SqlClient, db: DatabaseService, requireRun: RequireRun): RunStoreService["adopt"] =>
  (input) =>
    db
      .immediate(
        Effect.gen(function* () {
          if (!Number.isSafeInteger(input.leaseMs) || input.leaseMs <= 0) {
            return yield* new StoreFailure({
              operation: "adopt",
              message: "leaseMs must be a positive integer"
            })
          }
          const now = yield* Clock.currentTimeMillis
          const run = yield* requireRun(input.runId)
          const refuse = (reason: ClaimRefused["reason"]) =>
            new ClaimRefused({ runId: run.runId, state: run.state, reason })
          if (isTerminal(run.state)) return yield* refuse("terminal")
          if (run.state === "queued") return yield* refuse("queued")
          // A waiting run holds no claim: it moves to the new session and keeps waiting there.
          const waiting = run.waitRequestId !== null
          if (waiting && input.sessionId === run.targetSessionId) return yield* refuse("waiting")
          const live = run.claimToken !== null && (run.claimExpiresAt ?? 0) > now
          if (live && !(input.takeoverFrom !== undefined && run.claimToken === input.takeoverFrom)) {
            return yield* refuse("held")
          }
          const from = run.targetSessionId
          const to = input.sessionId
          let adoption: AdoptionFacts | null = null
          if (from !== to) {
            // One queued or active run per session, as `reserve` keeps it.
            const active = yield* sql`SELECT run_id, state FROM workflow_runs
                WHERE target_session_id = ${to} AND state IN ('queued', 'running', 'waiting')
                  AND run_id <> ${run.runId}`.pipe(Effect.flatMap(Schema.decodeUnknown(ActiveRow)))
            const other = active[0]
            if (other !== undefined) {
              return yield* new ReservationConflict({
                sessionId: to,
                runId: other.run_id,
                state: other.state
              })
            }
            const pending = yield* sql`SELECT * FROM workflow_turn_intents
                WHERE run_id = ${run.runId} AND target_session_id = ${from} AND resolved_at IS NULL
                ORDER BY requested_at, intent_id`.pipe(Effect.flatMap(decodeIntents("adopt")))
            // A delivery in flight may be writing its message into the old session: wait for it.
            if (pending.some((i) => i.deliveryClaimToken !== null && (i.deliveryClaimExpiresAt ?? 0) > now)) {
              return yield* refuse("delivering")
            }
            const moved: Array<{ readonly from: string; readonly to: string }> = []
            for (const intent of pending) {
              const id = yield* intentId({ ...intent, targetSessionId: to }).pipe(
                Effect.mapError((error) => new StoreFailure({ operation: "adopt", message: error.message }))
              )
              // Every field but the identity and the (expired) claim stays as it was.
              yield* sql`INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
                  target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at)
                SELECT ${id}, source_event_id, run_id, workflow_ref, ${to}, cause, node_id, attempt_id,
                  fallback_facts_json, requested_at, eligible_at
                FROM workflow_turn_intents WHERE intent_id = ${intent.intentId}
                ON CONFLICT (intent_id) DO NOTHING`
              yield* sql`DELETE FROM workflow_turn_intents
                WHERE intent_id = ${intent.intentId} AND resolved_at IS NULL`
              moved.push({ from: intent.intentId, to: id })
            }
            const notifications = yield* sql`UPDATE workflow_notifications SET target_session_id = ${to}
                WHERE run_id = ${run.runId} AND target_session_id = ${from} AND delivered_at IS NULL
                RETURNING notification_id`
            yield* sql`UPDATE workflow_runs SET target_session_id = ${to} WHERE run_id = ${run.runId}`
            adoption = {
              fromSessionId: from,
              toSessionId: to,
              intents: moved,
              notifications: notifications.length
            }
            yield* insertEvent(
              sql,
              run.runId,
              { kind: "adopted", message: `adopted by session ${to} from session ${from}`, adoption },
              iso(now)
            )
          }
          if (!waiting)
            yield* takeOver(sql, run.runId, { token: input.token, expires: now + input.leaseMs, now })
          return { run: yield* requireRun(run.runId), adoption }
        })
      )
      .pipe(asStoreFailure("adopt"))
