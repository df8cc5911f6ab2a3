/**
 * The SQLite controller database's schema versions, for @effect/sql's Migrator
 * (`schema-versions.ts` decides when they run). Each entry runs once per file, in order, inside
 * the opening BEGIN IMMEDIATE transaction, and is recorded in `effect_sql_migrations`.
 *
 * Both are written to also adopt a file of a release that predates versioning (its tables
 * exist, nothing is recorded): version 1 is idempotent DDL, so it creates only what such a file
 * lacks; version 2 recognises the old shape from the stored DDL itself.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Effect } from "effect"
import { CONTROLLER_SCHEMA, controllerSchemaStatements, turnIntentsTable } from "./schema.ts"
import { TURN_INTENT_COLUMNS } from "./turn-intent-rows.ts"
import { backfillRunEnds, runEndColumns, terminalImmutable } from "./run-schema.ts"

const COLUMN_LIST = TURN_INTENT_COLUMNS.join(", ")

/** Version 1: every table, index and trigger of `pi-workflows.controller-store.v1`. */
const controllerStoreV1 = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of controllerSchemaStatements) yield* sql.unsafe(statement)
  yield* sql`INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ${CONTROLLER_SCHEMA})
    ON CONFLICT (key) DO NOTHING`
})

/**
 * `workflow_turn_intents.cause` gained `completed` (a completed run's terminal turn intent).
 * SQLite cannot change a CHECK constraint in place, so a table whose constraint predates it is
 * rebuilt: new table, copy, drop, rename. True when the table was rebuilt.
 */
export const upgradeTurnIntentCauses = (
  sql: SqlClient.SqlClient
): Effect.Effect<boolean, SqlError.SqlError> =>
  Effect.gen(function* () {
    const rows = yield* sql<{ sql: string }>`
      SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'workflow_turn_intents'`
    const ddl = rows[0]?.sql
    if (ddl === undefined || ddl.includes("'completed'")) return false
    yield* sql.unsafe("DROP TABLE IF EXISTS workflow_turn_intents_next")
    yield* sql.unsafe(turnIntentsTable("workflow_turn_intents_next"))
    yield* sql.unsafe(
      `INSERT INTO workflow_turn_intents_next (${COLUMN_LIST})
       SELECT ${COLUMN_LIST} FROM workflow_turn_intents`
    )
    yield* sql.unsafe("DROP TABLE workflow_turn_intents")
    yield* sql.unsafe("ALTER TABLE workflow_turn_intents_next RENAME TO workflow_turn_intents")
    // The drop removed the table's indexes and triggers: the idempotent DDL recreates them.
    for (const statement of controllerSchemaStatements) yield* sql.unsafe(statement)
    return true
  })

/** Version 2: the turn intents table accepts cause `completed` (already so in a file made by version 1). */
const turnIntentCauseCompleted = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.asVoid(upgradeTurnIntentCauses(sql))
)

/**
 * Version 3: a run's end as facts (`end_kind`, `end_by`, `end_node_id`, `end_attempt_id`),
 * backfilled for runs that ended before. Terminal rows are immutable by trigger: it is dropped
 * for the backfill and recreated, inside the migration's transaction.
 */
const runEndFacts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of runEndColumns("TEXT")) yield* sql.unsafe(statement)
  yield* sql.unsafe("DROP TRIGGER IF EXISTS workflow_runs_terminal_immutable")
  yield* sql.unsafe(backfillRunEnds((field) => `json_extract(error_json, '$.${field}')`))
  yield* sql.unsafe(terminalImmutable)
})

/** The migrations, by `<id>_<name>`, for `Migrator.fromRecord`. Never renumber or edit a shipped one. */
export const migrations = {
  "1_controller_store_v1": controllerStoreV1,
  "2_turn_intent_cause_completed": turnIntentCauseCompleted,
  "3_run_end_facts": runEndFacts
}
