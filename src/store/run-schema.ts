/**
 * DDL for workflow runs, their step records and agent requests. The run row doubles as the run
 * queue entry: reservation, claim token + lease, park and terminal state live on it, so one
 * conditional statement (or one BEGIN IMMEDIATE transaction) fences every runner write.
 */

const TERMINAL = "('completed', 'failed', 'timed_out', 'cancelled')"

const runs = `CREATE TABLE IF NOT EXISTS workflow_runs (
  run_id TEXT PRIMARY KEY NOT NULL CHECK (length(run_id) BETWEEN 1 AND 512),
  workflow_name TEXT NOT NULL CHECK (length(workflow_name) BETWEEN 1 AND 512),
  workflow_ref TEXT NOT NULL CHECK (length(workflow_ref) BETWEEN 1 AND 512),
  revision INTEGER,
  source_fingerprint TEXT NOT NULL,
  snapshot_json TEXT NOT NULL,
  target_session_id TEXT NOT NULL CHECK (length(target_session_id) BETWEEN 1 AND 512),
  origin TEXT NOT NULL CHECK (origin IN ('tool', 'command')),
  input_json TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN
    ('queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled')),
  current_node_id TEXT,
  current_attempt_id TEXT,
  max_steps INTEGER NOT NULL CHECK (max_steps >= 1),
  result_json TEXT,
  error_json TEXT,
  pause_requested INTEGER NOT NULL DEFAULT 0 CHECK (pause_requested IN (0, 1)),
  cancel_requested TEXT CHECK (cancel_requested IS NULL OR cancel_requested IN ('agent', 'user')),
  parked_reason TEXT,
  interruptions INTEGER NOT NULL DEFAULT 0 CHECK (interruptions >= 0),
  abort_cause TEXT CHECK (abort_cause IS NULL OR abort_cause IN
    ('agentCancelled', 'timedOut', 'failed', 'launchFailed', 'controllerInterrupted', 'claimLost')),
  abort_node_id TEXT,
  abort_attempt_id TEXT,
  abort_interruption INTEGER,
  abort_pending INTEGER NOT NULL DEFAULT 0 CHECK (abort_pending IN (0, 1)),
  claim_token TEXT,
  claim_expires_at INTEGER,
  claims INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  CHECK ((claim_token IS NULL) = (claim_expires_at IS NULL)),
  CHECK (state NOT IN ${TERMINAL} OR claim_token IS NULL),
  CHECK ((state IN ${TERMINAL}) = (ended_at IS NOT NULL)),
  CHECK ((abort_cause IS NULL) = (abort_interruption IS NULL))
) STRICT`

/** One queued or active run per origin session: the reservation rule, enforced by the database. */
const oneActivePerSession = `CREATE UNIQUE INDEX IF NOT EXISTS workflow_runs_one_active_per_session
  ON workflow_runs (target_session_id) WHERE state IN ('queued', 'running', 'waiting')`

const runsBySession = `CREATE INDEX IF NOT EXISTS workflow_runs_by_session
  ON workflow_runs (target_session_id, created_at, run_id)`

export const terminalImmutable = `CREATE TRIGGER IF NOT EXISTS workflow_runs_terminal_immutable
  BEFORE UPDATE ON workflow_runs
  WHEN OLD.state IN ${TERMINAL}
  BEGIN SELECT RAISE(ABORT, 'terminal workflow runs are immutable'); END`

/**
 * One row per node visit. `outcome` and `interrupted` stay NULL while the attempt is in flight;
 * `interrupted` records why an attempt stopped without an outcome (park, takeover).
 */
const steps = `CREATE TABLE IF NOT EXISTS workflow_steps (
  run_id TEXT NOT NULL REFERENCES workflow_runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  node_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL UNIQUE,
  timeout_ms REAL,
  outcome TEXT CHECK (outcome IS NULL OR outcome IN ('ok', 'timed_out', 'failed', 'cancelled')),
  output_json TEXT,
  error TEXT,
  interrupted TEXT,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  PRIMARY KEY (run_id, seq),
  CHECK (outcome IS NULL OR interrupted IS NULL),
  CHECK ((outcome IS NULL AND interrupted IS NULL) = (ended_at IS NULL)),
  CHECK (output_json IS NULL OR outcome = 'ok')
) STRICT`

/** Agent step requests: answered once by `submit`, or closed (timeout, cancel, park, takeover). */
const requests = `CREATE TABLE IF NOT EXISTS workflow_requests (
  request_id TEXT PRIMARY KEY NOT NULL CHECK (length(request_id) BETWEEN 1 AND 512),
  run_id TEXT NOT NULL REFERENCES workflow_runs (run_id),
  node_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL UNIQUE REFERENCES workflow_steps (attempt_id),
  state TEXT NOT NULL CHECK (state IN ('open', 'submitted', 'closed')),
  closed_reason TEXT,
  output_json TEXT,
  receipt_json TEXT,
  opened_at TEXT NOT NULL,
  ended_at TEXT,
  CHECK ((state = 'submitted') = (output_json IS NOT NULL AND receipt_json IS NOT NULL)),
  CHECK ((state = 'closed') = (closed_reason IS NOT NULL)),
  CHECK ((state = 'open') = (ended_at IS NULL))
) STRICT`

const oneOpenRequestPerRun = `CREATE UNIQUE INDEX IF NOT EXISTS workflow_requests_one_open_per_run
  ON workflow_requests (run_id) WHERE state = 'open'`

/**
 * Durable facts about a run that are not part of its state: the successor-turn guarantee was
 * lost for an interruption, a result presentation reached the session. Append-only.
 */
const events = `CREATE TABLE IF NOT EXISTS workflow_run_events (
  run_id TEXT NOT NULL REFERENCES workflow_runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1),
  kind TEXT NOT NULL CHECK (kind IN ('guaranteeLost', 'presented')),
  message TEXT NOT NULL CHECK (length(message) <= 4096),
  created_at TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) STRICT`

/** DDL for runs, step records, agent requests and the run queue. */
export const runSchemaStatements: ReadonlyArray<string> = [
  runs,
  oneActivePerSession,
  runsBySession,
  terminalImmutable,
  steps,
  requests,
  oneOpenRequestPerRun,
  events
]

/**
 * Schema version 3 (both backends): how a run ended, as facts (`RunEnd`): `end_kind`, `end_by`,
 * and the node and attempt the run stood at. Added columns, never renamed ones; `textType` is
 * the backend's text column type.
 */
export const runEndColumns = (textType: string): ReadonlyArray<string> => [
  `ALTER TABLE workflow_runs ADD COLUMN end_kind ${textType} CHECK (end_kind IS NULL OR end_kind IN
    ('completed', 'failed', 'maxSteps', 'timedOut', 'cancelled', 'launchFailed', 'controllerInterrupted'))`,
  `ALTER TABLE workflow_runs ADD COLUMN end_by ${textType} CHECK (end_by IS NULL OR end_by IN
    ('engine', 'agent', 'user', 'controller'))`,
  `ALTER TABLE workflow_runs ADD COLUMN end_node_id ${textType}`,
  `ALTER TABLE workflow_runs ADD COLUMN end_attempt_id ${textType}`
]

/**
 * The end facts of runs that ended before version 3, from what those rows hold. Releases before
 * it wrote fixed text markers into the error message; this backfill is the one place that reads
 * them (nothing after it decides from message text). `errorField` extracts a field of
 * `error_json` as SQL text in the backend's dialect. The terminal-row trigger must be off.
 */
export const backfillRunEnds = (errorField: (field: string) => string): string => {
  const message = errorField("message")
  const starts = (marker: string) => `substr(${message}, 1, ${marker.length}) = '${marker}'`
  const maxSteps = starts("the run reached maxSteps")
  const controller = starts("interrupted by the controller")
  // Activation refused the queued run: it failed before any node ran.
  const launch = `${errorField("nodeId")} IS NULL AND NOT EXISTS (SELECT 1 FROM workflow_steps s
      WHERE s.run_id = workflow_runs.run_id AND s.outcome IS NOT NULL)`
  const launchFailed = `state = 'failed' AND NOT (${maxSteps}) AND NOT (${controller}) AND ${launch}`
  return `UPDATE workflow_runs SET
    end_kind = CASE
      WHEN state = 'completed' THEN 'completed'
      WHEN state = 'timed_out' THEN 'timedOut'
      WHEN state = 'cancelled' THEN 'cancelled'
      WHEN ${maxSteps} THEN 'maxSteps'
      WHEN ${controller} THEN 'controllerInterrupted'
      WHEN ${launch} THEN 'launchFailed'
      ELSE 'failed' END,
    end_by = CASE
      WHEN state = 'cancelled' THEN coalesce(cancel_requested,
        CASE WHEN ${starts("cancelled by the agent")} THEN 'agent' ELSE 'user' END)
      WHEN state = 'failed' AND ${controller} THEN 'controller'
      ELSE 'engine' END,
    end_node_id = CASE WHEN ${launchFailed} THEN NULL ELSE current_node_id END,
    end_attempt_id = current_attempt_id
  WHERE state IN ${TERMINAL} AND end_kind IS NULL`
}
