/**
 * StepReminderStore on the controller database (SQLite, or PostgreSQL through the same
 * SqlClient; DDL in `schema.ts` version 5). A take is one `INSERT … ON CONFLICT DO NOTHING`, so
 * two processes racing for the same reminder get one winner without a transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Layer, Schema } from "effect"
import { checkId } from "../domain/identity.ts"
import { lockWaitInContext, traced } from "./database.ts"
import { asStoreFailure } from "./store-errors.ts"
import { StepReminderStore, type StepReminderStoreService } from "./step-reminder-store.ts"

const Row = Schema.Struct({
  run_id: Schema.String,
  node_id: Schema.String,
  attempt_id: Schema.String,
  request_id: Schema.String,
  session_id: Schema.String,
  // PostgreSQL returns an INTEGER as a number, SQLite too; a bigint driver would give a string.
  ordinal: Schema.Union(
    Schema.Literal(1, 2, 3),
    Schema.compose(Schema.NumberFromString, Schema.Literal(1, 2, 3))
  ),
  created_at: Schema.String
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

const Count = Schema.Struct({
  attempt_id: Schema.String,
  reminders: Schema.Union(Schema.Number, Schema.NumberFromString)
})
const decodeCounts = Schema.decodeUnknown(Schema.Array(Count))

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const lockWait = yield* lockWaitInContext

  const take: StepReminderStoreService["take"] = (input) =>
    Effect.gen(function* () {
      yield* checkId("runId", input.runId)
      yield* checkId("nodeId", input.nodeId)
      yield* checkId("attemptId", input.attemptId)
      yield* checkId("requestId", input.requestId)
      yield* checkId("sessionId", input.sessionId)
      const now = new Date(yield* Clock.currentTimeMillis).toISOString()
      const rows = yield* lockWait(sql`INSERT INTO workflow_step_reminders
          (attempt_id, ordinal, run_id, node_id, request_id, session_id, created_at)
        VALUES (${input.attemptId}, ${input.ordinal}, ${input.runId}, ${input.nodeId}, ${input.requestId},
          ${input.sessionId}, ${now})
        ON CONFLICT (attempt_id, ordinal) DO NOTHING
        RETURNING attempt_id`).pipe(asStoreFailure("StepReminderStore.take"))
      return rows.length > 0
    })

  const forAttempt: StepReminderStoreService["forAttempt"] = (attemptId) =>
    sql`SELECT run_id, node_id, attempt_id, request_id, session_id, ordinal, created_at
        FROM workflow_step_reminders WHERE attempt_id = ${attemptId} ORDER BY ordinal`.pipe(
      Effect.flatMap(decodeRows),
      Effect.map((rows) =>
        rows.map((row) => ({
          runId: row.run_id,
          nodeId: row.node_id,
          attemptId: row.attempt_id,
          requestId: row.request_id,
          sessionId: row.session_id,
          ordinal: row.ordinal,
          createdAt: row.created_at
        }))
      ),
      asStoreFailure("StepReminderStore.forAttempt")
    )

  const countsForRun: StepReminderStoreService["countsForRun"] = (runId) =>
    sql`SELECT attempt_id, COUNT(*) AS reminders FROM workflow_step_reminders
        WHERE run_id = ${runId} AND ordinal <= 2 GROUP BY attempt_id`.pipe(
      Effect.flatMap(decodeCounts),
      Effect.map((rows) => new Map(rows.map((row) => [row.attempt_id, row.reminders] as const))),
      asStoreFailure("StepReminderStore.countsForRun")
    )

  return StepReminderStore.of({
    take: traced("StepReminderStore.take", take),
    forAttempt: traced("StepReminderStore.forAttempt", forAttempt),
    countsForRun: traced("StepReminderStore.countsForRun", countsForRun)
  })
})

/** The store over an already-provided SqlClient (schema created by the Database). */
export const layer: Layer.Layer<StepReminderStore, never, SqlClient.SqlClient> = Layer.effect(
  StepReminderStore,
  make
)
