/**
 * IDs by prefix for the operator CLI's short IDs: one bounded query per table, the same on
 * SQLite and PostgreSQL. It scans the table (no index serves a prefix of a digest), and returns
 * at most `limit` IDs.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { asStoreFailure } from "./store-errors.ts"

const idsWithPrefix = (sql: SqlClient.SqlClient, table: "intents" | "runs", prefix: string, limit: number) =>
  (table === "intents"
    ? sql<{ readonly id: string }>`SELECT intent_id AS id FROM workflow_turn_intents
        WHERE substr(intent_id, 1, ${prefix.length}) = ${prefix} ORDER BY intent_id LIMIT ${limit}`
    : sql<{ readonly id: string }>`SELECT run_id AS id FROM workflow_runs
        WHERE substr(run_id, 1, ${prefix.length}) = ${prefix} ORDER BY run_id LIMIT ${limit}`
  ).pipe(
    Effect.map((rows) => rows.map((row) => String(row.id))),
    asStoreFailure("list")
  )

/** Pi session IDs (runs' and intents' target sessions) that start with `prefix`, at most `limit`. */
const sessionsWithPrefix = (sql: SqlClient.SqlClient, prefix: string, limit: number) =>
  sql<{ readonly id: string }>`SELECT id FROM (
      SELECT target_session_id AS id FROM workflow_runs WHERE substr(target_session_id, 1, ${prefix.length}) = ${prefix}
      UNION
      SELECT target_session_id AS id FROM workflow_turn_intents
        WHERE substr(target_session_id, 1, ${prefix.length}) = ${prefix}
    ) AS sessions ORDER BY id LIMIT ${limit}`.pipe(
    Effect.map((rows) => rows.map((row) => String(row.id))),
    asStoreFailure("list")
  )

/** The prefix lookup over the client in context. */
export const IdPrefixes = Effect.map(SqlClient.SqlClient, (sql) => ({
  idsWithPrefix: (table: "intents" | "runs", prefix: string, limit: number) =>
    idsWithPrefix(sql, table, prefix, limit),
  sessionsWithPrefix: (prefix: string, limit: number) => sessionsWithPrefix(sql, prefix, limit)
}))
