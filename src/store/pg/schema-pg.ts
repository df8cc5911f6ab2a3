/**
 * DDL of the controller store on PostgreSQL: the same tables, columns, keys, CHECK constraints,
 * partial indexes and immutability rules as the SQLite schema (`../schema.ts`, `../run-rows.ts`),
 * in PostgreSQL's dialect:
 * - text columns use the "C" collation, so ORDER BY sorts as SQLite's BINARY collation does
 *   (oldest first by ISO time, then by ID) whatever the database's locale;
 * - epoch-millisecond columns are BIGINT (the client parses int8 to a JS number);
 * - the immutability triggers raise through one PL/pgSQL function with SQLite's messages.
 *
 * Versioned through @effect/sql's Migrator: each entry of `migrations` runs once per database,
 * in order, recorded in `effect_sql_migrations`.
 */
import { waitsTable } from "../run-waits.ts"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { adoptedEventsPg } from "../run-events-sql.ts"
import { backfillRunEnds, runEndColumns, stepRunnerColumns } from "../run-rows.ts"
import { CONTROLLER_SCHEMA, moveSnapshots, stepRemindersTable } from "../schema.ts"
import { knownVersions } from "../schema-versions.ts"

const T = `TEXT COLLATE "C"`
const ID = (column: string, nullable = false) =>
  nullable
    ? `${column} ${T} CHECK (${column} IS NULL OR length(${column}) BETWEEN 1 AND 512)`
    : `${column} ${T} NOT NULL CHECK (length(${column}) BETWEEN 1 AND 512)`

/** Interruption causes: what an abort records on a run (`abort_cause`). */
const CAUSES = `('agentCancelled', 'timedOut', 'failed', 'launchFailed', 'controllerInterrupted', 'claimLost')`
/** A turn intent's cause: an interruption's, or the completion a completed run's terminal turn answers. */
const INTENT_CAUSES = `('agentCancelled', 'timedOut', 'failed', 'launchFailed', 'controllerInterrupted', 'claimLost',
  'completed')`
const TERMINAL = "('completed', 'failed', 'timed_out', 'cancelled')"

const raiseFunction = `CREATE OR REPLACE FUNCTION pi_workflows_refuse_update() RETURNS trigger
  LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation'; END $$`

const refuse = (name: string, table: string, when: string, message: string, columns?: string) =>
  `CREATE TRIGGER ${name} BEFORE UPDATE${columns === undefined ? "" : ` OF ${columns}`} ON ${table}
  FOR EACH ROW${when === "" ? "" : ` WHEN (${when})`} EXECUTE FUNCTION pi_workflows_refuse_update('${message}')`

const metadata = `CREATE TABLE pi_workflows_metadata (
  key ${T} PRIMARY KEY NOT NULL,
  value ${T} NOT NULL
)`

// `rowid` (last, so positional INSERTs of the seven columns still fit): SQLite's implicit row
// number, made explicit; the store orders and takes by it.
const notifications = `CREATE TABLE workflow_notifications (
  notification_id ${T} PRIMARY KEY NOT NULL,
  run_id ${T} NOT NULL,
  target_session_id ${T} NOT NULL,
  kind ${T} NOT NULL CHECK (kind IN ('progress', 'final')),
  payload_json ${T} NOT NULL,
  created_at ${T} NOT NULL,
  delivered_at ${T},
  rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE
)`

/**
 * Two statements shared with SQLite use its two-argument scalar `max`; PostgreSQL spells it
 * GREATEST. This overload (beside the one-argument aggregate) lets them run unchanged.
 */
const scalarMax = `CREATE OR REPLACE FUNCTION max(a INTEGER, b INTEGER) RETURNS INTEGER
  LANGUAGE sql IMMUTABLE AS 'SELECT GREATEST(a, b)'`

/**
 * A delivered notification never changes. `takePending` marks rows chosen by a subquery; under
 * READ COMMITTED a second deliverer's UPDATE waits for the first one's row lock and would then
 * mark (and return) the same row again. Skipping the update of a delivered row (RETURN NULL
 * leaves it out of RETURNING too) makes each row taken exactly once, as on SQLite.
 */
const deliveredOnce = [
  `CREATE OR REPLACE FUNCTION pi_workflows_skip_delivered() RETURNS trigger
  LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
  `CREATE TRIGGER workflow_notifications_delivered_once BEFORE UPDATE ON workflow_notifications
  FOR EACH ROW WHEN (OLD.delivered_at IS NOT NULL) EXECUTE FUNCTION pi_workflows_skip_delivered()`
]

const turnIntents = `CREATE TABLE workflow_turn_intents (
  ${ID("intent_id")} PRIMARY KEY,
  ${ID("source_event_id")},
  ${ID("run_id")},
  ${ID("workflow_ref")},
  ${ID("target_session_id")},
  cause ${T} NOT NULL CHECK (cause IN ${INTENT_CAUSES}),
  ${ID("node_id", true)},
  ${ID("attempt_id", true)},
  fallback_facts_json ${T} NOT NULL CHECK (octet_length(fallback_facts_json) <= 65536),
  requested_at ${T} NOT NULL,
  eligible_at ${T},
  resolved_at ${T},
  resolution ${T} CHECK (resolution IS NULL OR resolution IN ('workflowPrompt', 'presentation', 'fallback')),
  resolution_message_id ${T},
  delivery_claim_token ${T},
  delivery_claim_expires_at BIGINT,
  CHECK ((resolved_at IS NULL AND resolution IS NULL AND resolution_message_id IS NULL)
      OR (resolved_at IS NOT NULL AND resolution IS NOT NULL AND resolution_message_id IS NOT NULL)),
  CHECK ((delivery_claim_token IS NULL) = (delivery_claim_expires_at IS NULL))
)`

const turnIntentIndexes = [
  `CREATE INDEX workflow_turn_intents_pending_by_run
  ON workflow_turn_intents (run_id, target_session_id, requested_at, intent_id)
  WHERE resolved_at IS NULL`,
  `CREATE INDEX workflow_turn_intents_eligible_by_session
  ON workflow_turn_intents (target_session_id, eligible_at, intent_id)
  WHERE resolved_at IS NULL AND eligible_at IS NOT NULL`,
  refuse(
    "workflow_turn_intents_resolved_immutable",
    "workflow_turn_intents",
    "OLD.resolved_at IS NOT NULL",
    "resolved turn intents are immutable"
  ),
  refuse(
    "workflow_turn_intents_identity_immutable",
    "workflow_turn_intents",
    "",
    "turn intent identity is immutable",
    "intent_id, source_event_id, run_id, workflow_ref, target_session_id, cause, node_id, attempt_id, requested_at"
  )
]

const runs = `CREATE TABLE workflow_runs (
  ${ID("run_id")} PRIMARY KEY,
  ${ID("workflow_name")},
  ${ID("workflow_ref")},
  revision INTEGER,
  source_fingerprint ${T} NOT NULL,
  snapshot_json ${T} NOT NULL,
  ${ID("target_session_id")},
  origin ${T} NOT NULL CHECK (origin IN ('tool', 'command')),
  input_json ${T} NOT NULL,
  state ${T} NOT NULL CHECK (state IN
    ('queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled')),
  current_node_id ${T},
  current_attempt_id ${T},
  max_steps INTEGER NOT NULL CHECK (max_steps >= 1),
  result_json ${T},
  error_json ${T},
  pause_requested INTEGER NOT NULL DEFAULT 0 CHECK (pause_requested IN (0, 1)),
  cancel_requested ${T} CHECK (cancel_requested IS NULL OR cancel_requested IN ('agent', 'user')),
  parked_reason ${T},
  interruptions INTEGER NOT NULL DEFAULT 0 CHECK (interruptions >= 0),
  abort_cause ${T} CHECK (abort_cause IS NULL OR abort_cause IN ${CAUSES}),
  abort_node_id ${T},
  abort_attempt_id ${T},
  abort_interruption INTEGER,
  abort_pending INTEGER NOT NULL DEFAULT 0 CHECK (abort_pending IN (0, 1)),
  claim_token ${T},
  claim_expires_at BIGINT,
  claims INTEGER NOT NULL DEFAULT 0,
  created_at ${T} NOT NULL,
  updated_at ${T} NOT NULL,
  started_at ${T},
  ended_at ${T},
  CHECK ((claim_token IS NULL) = (claim_expires_at IS NULL)),
  CHECK (state NOT IN ${TERMINAL} OR claim_token IS NULL),
  CHECK ((state IN ${TERMINAL}) = (ended_at IS NOT NULL)),
  CHECK ((abort_cause IS NULL) = (abort_interruption IS NULL))
)`

const steps = `CREATE TABLE workflow_steps (
  run_id ${T} NOT NULL REFERENCES workflow_runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  node_id ${T} NOT NULL,
  attempt_id ${T} NOT NULL UNIQUE,
  timeout_ms DOUBLE PRECISION,
  outcome ${T} CHECK (outcome IS NULL OR outcome IN ('ok', 'timed_out', 'failed', 'cancelled')),
  output_json ${T},
  error ${T},
  interrupted ${T},
  started_at ${T} NOT NULL,
  ended_at ${T},
  PRIMARY KEY (run_id, seq),
  CHECK (outcome IS NULL OR interrupted IS NULL),
  CHECK ((outcome IS NULL AND interrupted IS NULL) = (ended_at IS NULL)),
  CHECK (output_json IS NULL OR outcome = 'ok')
)`

const requests = `CREATE TABLE workflow_requests (
  ${ID("request_id")} PRIMARY KEY,
  run_id ${T} NOT NULL REFERENCES workflow_runs (run_id),
  node_id ${T} NOT NULL,
  attempt_id ${T} NOT NULL UNIQUE REFERENCES workflow_steps (attempt_id),
  state ${T} NOT NULL CHECK (state IN ('open', 'submitted', 'closed')),
  closed_reason ${T},
  output_json ${T},
  receipt_json ${T},
  opened_at ${T} NOT NULL,
  ended_at ${T},
  CHECK ((state = 'submitted') = (output_json IS NOT NULL AND receipt_json IS NOT NULL)),
  CHECK ((state = 'closed') = (closed_reason IS NOT NULL)),
  CHECK ((state = 'open') = (ended_at IS NULL))
)`

const events = `CREATE TABLE workflow_run_events (
  run_id ${T} NOT NULL REFERENCES workflow_runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  kind ${T} NOT NULL CHECK (kind IN ('guaranteeLost', 'presented')),
  message ${T} NOT NULL CHECK (length(message) <= 4096),
  created_at ${T} NOT NULL,
  PRIMARY KEY (run_id, seq)
)`

const runIndexes = [
  `CREATE UNIQUE INDEX workflow_runs_one_active_per_session
  ON workflow_runs (target_session_id) WHERE state IN ('queued', 'running', 'waiting')`,
  `CREATE INDEX workflow_runs_by_session ON workflow_runs (target_session_id, created_at, run_id)`,
  refuse(
    "workflow_runs_terminal_immutable",
    "workflow_runs",
    `OLD.state IN ${TERMINAL}`,
    "terminal workflow runs are immutable"
  ),
  `CREATE UNIQUE INDEX workflow_requests_one_open_per_run ON workflow_requests (run_id) WHERE state = 'open'`
]

const notificationIndexes = [
  `CREATE INDEX workflow_notifications_pending_by_session
  ON workflow_notifications (target_session_id, created_at) WHERE delivered_at IS NULL`,
  `CREATE INDEX workflow_notifications_by_run ON workflow_notifications (run_id, kind, created_at)`
]

const launches = `CREATE TABLE workflow_run_launches (
  run_id ${T} PRIMARY KEY NOT NULL REFERENCES workflow_runs (run_id),
  kind ${T} NOT NULL CHECK (kind IN ('restart', 'monitor', 'start')),
  ${ID("parent_run_id", true)} UNIQUE,
  ${ID("terminal_run_id", true)} UNIQUE,
  ${ID("terminal_intent_id", true)},
  ${ID("tool_call_id", true)},
  launch_json ${T} NOT NULL CHECK (octet_length(launch_json) <= 65536),
  created_at ${T} NOT NULL,
  CHECK ((kind = 'restart') = (parent_run_id IS NOT NULL)),
  CHECK ((terminal_run_id IS NULL) OR (tool_call_id IS NOT NULL))
)`

/** Version 1: everything the SQLite schema `pi-workflows.controller-store.v1` holds. */
export const controllerStoreV1: ReadonlyArray<string> = [
  raiseFunction,
  scalarMax,
  metadata,
  notifications,
  ...deliveredOnce,
  turnIntents,
  ...turnIntentIndexes,
  runs,
  steps,
  requests,
  events,
  ...runIndexes,
  ...notificationIndexes,
  launches,
  refuse("workflow_run_launches_immutable", "workflow_run_launches", "", "run launch data is immutable"),
  `INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', '${CONTROLLER_SCHEMA}')`
]

/**
 * Version 3 (numbered as on SQLite; PostgreSQL has no version 2): a run's end as facts, backfilled
 * for runs that ended before, with the terminal-row trigger off for the backfill only.
 */
export const runEndFactsPg: ReadonlyArray<string> = [
  ...runEndColumns(T),
  "ALTER TABLE workflow_runs DISABLE TRIGGER workflow_runs_terminal_immutable",
  backfillRunEnds((field) => `(error_json::json ->> '${field}')`),
  "ALTER TABLE workflow_runs ENABLE TRIGGER workflow_runs_terminal_immutable"
]

/** Version 4: the definition snapshot in its own table (`moveSnapshots`, in `../schema.ts`). */
export const runSnapshotsPg: ReadonlyArray<string> = [
  `CREATE TABLE workflow_run_snapshots (
  run_id ${T} PRIMARY KEY NOT NULL REFERENCES workflow_runs (run_id),
  snapshot_json ${T} NOT NULL
)`,
  refuse("workflow_run_snapshots_immutable", "workflow_run_snapshots", "", "run snapshots are immutable"),
  ...moveSnapshots
]

const run = (statements: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true })
  )

/**
 * The migrations, by `<id>_<name>`, for `Migrator.fromRecord`. Never renumber or edit a shipped
 * one. Version 1 already accepts turn-intent cause `completed`, which SQLite files gained in
 * their version 2: each backend numbers its own versions.
 */
export const migrations = {
  "1_controller_store_v1": run(controllerStoreV1),
  "3_run_end_facts": run(runEndFactsPg),
  "4_run_snapshots": run(runSnapshotsPg),
  "5_step_reminders": run(stepRemindersTable(T)),
  "6_run_event_adopted": run(adoptedEventsPg(T)),
  "7_waits": run(waitsTable(T, "BIGINT")),
  "8_step_runner": run(stepRunnerColumns(T, "BIGINT"))
}

/** The versions this release knows on PostgreSQL. */
export const KNOWN_PG = knownVersions(migrations)
