/**
 * The run events table (`workflow_run_events`: durable facts about a run beside its state,
 * append-only): its row shape and strict decoding, the one statement that appends an event, and
 * schema version 6 (both backends), which adds the kind `adopted` and its facts (`data_json`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { AdoptionFacts, type RunEvent, RunEventKind } from "./run-events.ts"

export const RunEventRow = Schema.Struct({
  run_id: Schema.String,
  seq: Schema.Number,
  kind: RunEventKind,
  message: Schema.String,
  created_at: Schema.String,
  // Absent before version 6 is recorded (a read-only open of an older file): no facts.
  data_json: Schema.optionalWith(Schema.NullOr(Schema.parseJson(AdoptionFacts)), { default: () => null })
})
export const decodeRunEvents = Schema.decodeUnknown(Schema.Array(RunEventRow))

export const toRunEvent = (row: typeof RunEventRow.Type): RunEvent => ({
  runId: row.run_id,
  seq: row.seq,
  kind: row.kind,
  message: row.message,
  at: row.created_at,
  adoption: row.kind === "adopted" ? row.data_json : null
})

/** Append one event to the run (the next `seq`), inside the caller's transaction. */
export const insertEvent = (
  sql: SqlClient.SqlClient,
  runId: string,
  event: { readonly kind: RunEventKind; readonly message: string; readonly adoption?: AdoptionFacts },
  at: string
) =>
  Effect.flatMap(
    sql`INSERT INTO workflow_run_events (run_id, seq, kind, message, created_at, data_json)
      VALUES (${runId},
        (SELECT coalesce(max(seq), 0) + 1 FROM workflow_run_events WHERE run_id = ${runId}),
        ${event.kind}, ${event.message.slice(0, 4_096)}, ${at},
        ${event.adoption === undefined ? null : JSON.stringify(event.adoption)})
      RETURNING *`,
    decodeRunEvents
  )

const KINDS = "('guaranteeLost', 'presented', 'adopted')"

/**
 * Version 6 on SQLite: a CHECK constraint cannot change in place, so the table is rebuilt (new
 * table, copy, drop, rename) with the kind `adopted` and the facts column. No other object
 * refers to it, and it has no index or trigger of its own.
 */
export const adoptedEventsSqlite: ReadonlyArray<string> = [
  "DROP TABLE IF EXISTS workflow_run_events_next",
  `CREATE TABLE workflow_run_events_next (
  run_id TEXT NOT NULL REFERENCES workflow_runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  kind TEXT NOT NULL CHECK (kind IN ${KINDS}),
  message TEXT NOT NULL CHECK (length(message) <= 4096),
  created_at TEXT NOT NULL,
  data_json TEXT CHECK (data_json IS NULL OR length(CAST(data_json AS BLOB)) <= 65536),
  PRIMARY KEY (run_id, seq)
) STRICT`,
  `INSERT INTO workflow_run_events_next (run_id, seq, kind, message, created_at)
  SELECT run_id, seq, kind, message, created_at FROM workflow_run_events`,
  "DROP TABLE workflow_run_events",
  "ALTER TABLE workflow_run_events_next RENAME TO workflow_run_events"
]

/** Version 6 on PostgreSQL: the kind's constraint replaced, the facts column added. */
export const adoptedEventsPg = (textType: string): ReadonlyArray<string> => [
  "ALTER TABLE workflow_run_events DROP CONSTRAINT workflow_run_events_kind_check",
  `ALTER TABLE workflow_run_events ADD CONSTRAINT workflow_run_events_kind_check CHECK (kind IN ${KINDS})`,
  `ALTER TABLE workflow_run_events ADD COLUMN data_json ${textType}
    CHECK (data_json IS NULL OR octet_length(data_json) <= 65536)`
]

/** Version 6 on SQLite, as the Migrator runs it (`schema.ts`). */
export const runEventAdopted = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(adoptedEventsSqlite, (statement) => sql.unsafe(statement), { discard: true })
)
