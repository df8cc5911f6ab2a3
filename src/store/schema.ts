/**
 * The controller database's schema, `pi-workflows.controller-store.v1`: the SQLite DDL (every
 * statement idempotent; the run tables' own in `run-rows.ts`) and its versions for @effect/sql's
 * Migrator (`pg/schema-pg.ts` holds PostgreSQL's). What an open does about the versions a
 * database has recorded is `schema-versions.ts`.
 *
 * Each migration runs once per file, in order, inside the opening BEGIN IMMEDIATE transaction. A
 * file of a release before versioning (tables, no record) is adopted: version 1 is idempotent
 * DDL, version 2 recognises the old shape from the stored DDL.
 */
import { waitsTable } from "./run-waits.ts"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Effect } from "effect"
import { runEventAdopted } from "./run-events-sql.ts"
import {
  backfillRunEnds,
  runEndColumns,
  runSchemaStatements,
  stepRunnerColumns,
  terminalImmutable
} from "./run-rows.ts"

export const CONTROLLER_SCHEMA = "pi-workflows.controller-store.v1"

const metadata = `CREATE TABLE IF NOT EXISTS pi_workflows_metadata (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) STRICT`

/** Passive workflow-authored reports only; launch failures are turn intents now. */
const notifications = `CREATE TABLE IF NOT EXISTS workflow_notifications (
  notification_id TEXT PRIMARY KEY NOT NULL,
  run_id TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('progress', 'final')),
  payload_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  delivered_at TEXT
) STRICT`

/** The turn intents table under another name (the cause migration builds the new table so). */
export const turnIntentsTable = (name: string) => `CREATE TABLE IF NOT EXISTS ${name} (
  intent_id TEXT PRIMARY KEY NOT NULL CHECK (length(intent_id) BETWEEN 1 AND 512),
  source_event_id TEXT NOT NULL CHECK (length(source_event_id) BETWEEN 1 AND 512),
  run_id TEXT NOT NULL CHECK (length(run_id) BETWEEN 1 AND 512),
  workflow_ref TEXT NOT NULL CHECK (length(workflow_ref) BETWEEN 1 AND 512),
  target_session_id TEXT NOT NULL CHECK (length(target_session_id) BETWEEN 1 AND 512),
  cause TEXT NOT NULL CHECK (cause IN
    ('agentCancelled', 'timedOut', 'failed', 'launchFailed', 'controllerInterrupted', 'claimLost',
     'completed')),
  node_id TEXT CHECK (node_id IS NULL OR length(node_id) BETWEEN 1 AND 512),
  attempt_id TEXT CHECK (attempt_id IS NULL OR length(attempt_id) BETWEEN 1 AND 512),
  fallback_facts_json TEXT NOT NULL CHECK (length(CAST(fallback_facts_json AS BLOB)) <= 65536),
  requested_at TEXT NOT NULL,
  eligible_at TEXT,
  resolved_at TEXT,
  resolution TEXT CHECK (resolution IS NULL OR resolution IN ('workflowPrompt', 'presentation', 'fallback')),
  resolution_message_id TEXT,
  delivery_claim_token TEXT,
  delivery_claim_expires_at INTEGER,
  CHECK ((resolved_at IS NULL AND resolution IS NULL AND resolution_message_id IS NULL)
      OR (resolved_at IS NOT NULL AND resolution IS NOT NULL AND resolution_message_id IS NOT NULL)),
  CHECK ((delivery_claim_token IS NULL) = (delivery_claim_expires_at IS NULL))
) STRICT`

/** Every column of `workflow_turn_intents`, in table order. */
export const TURN_INTENT_COLUMNS = [
  "intent_id",
  "source_event_id",
  "run_id",
  "workflow_ref",
  "target_session_id",
  "cause",
  "node_id",
  "attempt_id",
  "fallback_facts_json",
  "requested_at",
  "eligible_at",
  "resolved_at",
  "resolution",
  "resolution_message_id",
  "delivery_claim_token",
  "delivery_claim_expires_at"
] as const

const turnIntents = turnIntentsTable("workflow_turn_intents")

// Both indexes cover pending rows only, so their size and the cost of a sync pass do not grow
// with resolved history.
const pendingByRun = `CREATE INDEX IF NOT EXISTS workflow_turn_intents_pending_by_run
  ON workflow_turn_intents (run_id, target_session_id, requested_at, intent_id)
  WHERE resolved_at IS NULL`

const eligibleBySession = `CREATE INDEX IF NOT EXISTS workflow_turn_intents_eligible_by_session
  ON workflow_turn_intents (target_session_id, eligible_at, intent_id)
  WHERE resolved_at IS NULL AND eligible_at IS NOT NULL`

/** Resolved rows can never change again: enforced by the database, not only by the code. */
const resolvedImmutable = `CREATE TRIGGER IF NOT EXISTS workflow_turn_intents_resolved_immutable
  BEFORE UPDATE ON workflow_turn_intents
  WHEN OLD.resolved_at IS NOT NULL
  BEGIN SELECT RAISE(ABORT, 'resolved turn intents are immutable'); END`

const identityImmutable = `CREATE TRIGGER IF NOT EXISTS workflow_turn_intents_identity_immutable
  BEFORE UPDATE OF intent_id, source_event_id, run_id, workflow_ref, target_session_id, cause,
    node_id, attempt_id, requested_at ON workflow_turn_intents
  BEGIN SELECT RAISE(ABORT, 'turn intent identity is immutable'); END`

// Indexes of `workflow_notifications` (additive: an older file gains them on open).
// Pending rows by owner session: what delivery at session start and after a write reads. Partial,
// so it does not grow with delivered history.
const notificationsPendingBySession = `CREATE INDEX IF NOT EXISTS workflow_notifications_pending_by_session
  ON workflow_notifications (target_session_id, created_at)
  WHERE delivered_at IS NULL`

// A run's notifications by kind and time: the rate window and the status line.
const notificationsByRun = `CREATE INDEX IF NOT EXISTS workflow_notifications_by_run
  ON workflow_notifications (run_id, kind, created_at)`

/** Launch data: one row per run launched from a terminal turn or by `restart`, written once. */
const launches: ReadonlyArray<string> = [
  `CREATE TABLE IF NOT EXISTS workflow_run_launches (
  run_id TEXT PRIMARY KEY NOT NULL REFERENCES workflow_runs (run_id),
  kind TEXT NOT NULL CHECK (kind IN ('restart', 'monitor', 'start')),
  parent_run_id TEXT UNIQUE CHECK (parent_run_id IS NULL OR length(parent_run_id) BETWEEN 1 AND 512),
  terminal_run_id TEXT UNIQUE CHECK (terminal_run_id IS NULL OR length(terminal_run_id) BETWEEN 1 AND 512),
  terminal_intent_id TEXT CHECK (terminal_intent_id IS NULL OR length(terminal_intent_id) BETWEEN 1 AND 512),
  tool_call_id TEXT CHECK (tool_call_id IS NULL OR length(tool_call_id) BETWEEN 1 AND 512),
  launch_json TEXT NOT NULL CHECK (length(CAST(launch_json AS BLOB)) <= 65536),
  created_at TEXT NOT NULL,
  CHECK ((kind = 'restart') = (parent_run_id IS NOT NULL)),
  CHECK ((terminal_run_id IS NULL) OR (tool_call_id IS NOT NULL))
) STRICT`,
  `CREATE TRIGGER IF NOT EXISTS workflow_run_launches_immutable
  BEFORE UPDATE ON workflow_run_launches
  BEGIN SELECT RAISE(ABORT, 'run launch data is immutable'); END`
]

export const controllerSchemaStatements: ReadonlyArray<string> = [
  metadata,
  notifications,
  turnIntents,
  pendingByRun,
  eligibleBySession,
  resolvedImmutable,
  identityImmutable,
  ...runSchemaStatements,
  notificationsPendingBySession,
  notificationsByRun,
  ...launches
]

// --- Migrations (SQLite) ------------------------------------------------------------------------

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

/**
 * Version 4 (both backends): a run's definition snapshot in its own table, written once with
 * the run. In the run row it made every per-step UPDATE rewrite the whole record, overflow
 * pages and all (~220 KB of WAL per step for a 110 KB snapshot). The old column is dropped
 * rather than left empty: nothing reads it, and a release that did is refused by version 4.
 */
export const moveSnapshots: ReadonlyArray<string> = [
  `INSERT INTO workflow_run_snapshots (run_id, snapshot_json) SELECT run_id, snapshot_json FROM workflow_runs`,
  "ALTER TABLE workflow_runs DROP COLUMN snapshot_json"
]

const runSnapshots = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`CREATE TABLE workflow_run_snapshots (
  run_id TEXT PRIMARY KEY NOT NULL REFERENCES workflow_runs (run_id),
  snapshot_json TEXT NOT NULL
) STRICT`)
  yield* sql.unsafe(`CREATE TRIGGER workflow_run_snapshots_immutable
  BEFORE UPDATE ON workflow_run_snapshots
  BEGIN SELECT RAISE(ABORT, 'run snapshots are immutable'); END`)
  for (const statement of moveSnapshots) yield* sql.unsafe(statement)
})

/** Version 5 (both backends; `type`: the text type): step reminders (`step-reminder-store.ts`). */
export const stepRemindersTable = (type: string): ReadonlyArray<string> => [
  `CREATE TABLE workflow_step_reminders (
  attempt_id ${type} NOT NULL,
  ordinal INTEGER NOT NULL CHECK (ordinal IN (1, 2, 3)),
  run_id ${type} NOT NULL,
  node_id ${type} NOT NULL,
  request_id ${type} NOT NULL,
  session_id ${type} NOT NULL,
  created_at ${type} NOT NULL,
  PRIMARY KEY (attempt_id, ordinal)
)`,
  "CREATE INDEX workflow_step_reminders_by_run ON workflow_step_reminders (run_id)"
]

/** A migration that runs these statements in order. */
const statements = (list: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(list, (statement) => sql.unsafe(statement), { discard: true })
  )

/** The migrations, by `<id>_<name>`, for `Migrator.fromRecord`. Never renumber or edit a shipped one. */
export const migrations = {
  "1_controller_store_v1": controllerStoreV1,
  "2_turn_intent_cause_completed": turnIntentCauseCompleted,
  "3_run_end_facts": runEndFacts,
  "4_run_snapshots": runSnapshots,
  "5_step_reminders": statements(stepRemindersTable("TEXT")),
  "6_run_event_adopted": runEventAdopted,
  "7_waits": statements(waitsTable("TEXT", "INTEGER")),
  "8_step_runner": statements(stepRunnerColumns("TEXT", "INTEGER"))
}
