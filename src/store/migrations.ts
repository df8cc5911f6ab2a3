/**
 * Upgrades of controller databases written by earlier versions, run inside the opening
 * transaction before the idempotent DDL. SQLite cannot change a CHECK constraint in place, so a
 * table whose constraint predates a value is rebuilt: new table, copy, drop, rename. The DDL that
 * follows recreates the indexes and triggers the drop removed. Each upgrade recognises the old
 * shape from the stored DDL itself, so running it again changes nothing.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Effect } from "effect"
import { turnIntentsTable } from "./schema.ts"
import { TURN_INTENT_COLUMNS } from "./turn-intent-rows.ts"

const COLUMN_LIST = TURN_INTENT_COLUMNS.join(", ")

/**
 * `workflow_turn_intents.cause` gained `completed` (a completed run's terminal turn intent).
 * True when the table was rebuilt.
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
    return true
  })
