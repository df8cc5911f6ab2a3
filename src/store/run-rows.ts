/**
 * The run tables: DDL (versions in `schema.ts`; PostgreSQL's in `pg/schema-pg.ts`), row shapes
 * and their strict decoding (JSON columns too: nothing downstream sees unchecked stored text).
 * The run row is also the queue entry: claim + lease, park and terminal state live on it, so one
 * conditional statement (or one BEGIN IMMEDIATE transaction) fences every runner write.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Option, ParseResult, Schema } from "effect"
import { Cause } from "../domain/turn-intent.ts"
import {
  type RunRecord,
  type RequestRecord,
  RunState,
  StepOutcome,
  type StepRecord,
  SubmitReceipt
} from "./run-store.ts"
import { EndBy, EndKind, RunError } from "./run-end.ts"

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

/**
 * Version 8's DDL (both backends; `type`/`int`: the text and integer types): who ran each step
 * visit, so a takeover shows as a change of runner. Older visits keep NULL.
 */
export const stepRunnerColumns = (type: string, int: string): ReadonlyArray<string> => [
  `ALTER TABLE workflow_steps ADD COLUMN runner_host ${type}`,
  `ALTER TABLE workflow_steps ADD COLUMN runner_pid ${int}`
]

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

// --- Rows --------------------------------------------------------------------------------------
const Json = Schema.parseJson()
/** SQL NULL is "absent"; the JSON text `null` is a present null. */
const OptionalJson = Schema.transformOrFail(
  Schema.NullOr(Schema.String),
  Schema.OptionFromSelf(Schema.Unknown),
  {
    strict: true,
    decode: (text, _options, ast) => {
      if (text === null) return ParseResult.succeed(Option.none())
      try {
        return ParseResult.succeed(Option.some(JSON.parse(text) as unknown))
      } catch (error) {
        return ParseResult.fail(new ParseResult.Type(ast, text, `invalid JSON: ${String(error)}`))
      }
    },
    encode: (value) =>
      ParseResult.succeed(Option.match(value, { onNone: () => null, onSome: (v) => JSON.stringify(v) }))
  }
)
const Flag = Schema.Literal(0, 1)
const CancelBy = Schema.NullOr(Schema.Literal("agent", "user"))

/**
 * The definition snapshot, parsed once per distinct text: every full read of a run carries it
 * (`settle` reads the run back at each step), and parsing it per step made a step cost as much
 * as the workflow. Records share the parsed value, which nothing changes.
 */
let lastSnapshot: { readonly text: string; readonly value: unknown } | null = null
const SnapshotJson = Schema.transformOrFail(Schema.String, Schema.Unknown, {
  strict: true,
  decode: (text, _options, ast) => {
    if (lastSnapshot?.text === text) return ParseResult.succeed(lastSnapshot.value)
    try {
      const value: unknown = JSON.parse(text)
      lastSnapshot = { text, value }
      return ParseResult.succeed(value)
    } catch (error) {
      return ParseResult.fail(new ParseResult.Type(ast, text, `invalid JSON: ${String(error)}`))
    }
  },
  encode: (value) => ParseResult.succeed(JSON.stringify(value))
})

export const RunRow = Schema.Struct({
  run_id: Schema.String,
  workflow_name: Schema.String,
  workflow_ref: Schema.String,
  revision: Schema.NullOr(Schema.Number),
  source_fingerprint: Schema.String,
  snapshot_json: SnapshotJson,
  target_session_id: Schema.String,
  origin: Schema.Literal("tool", "command"),
  input_json: Json,
  state: RunState,
  current_node_id: Schema.NullOr(Schema.String),
  current_attempt_id: Schema.NullOr(Schema.String),
  max_steps: Schema.Number,
  result_json: OptionalJson,
  error_json: Schema.NullOr(Schema.parseJson(RunError)),
  pause_requested: Flag,
  cancel_requested: CancelBy,
  parked_reason: Schema.NullOr(Schema.String),
  interruptions: Schema.Number,
  abort_cause: Schema.NullOr(Cause),
  abort_node_id: Schema.NullOr(Schema.String),
  abort_attempt_id: Schema.NullOr(Schema.String),
  abort_interruption: Schema.NullOr(Schema.Number),
  abort_pending: Flag,
  claim_token: Schema.NullOr(Schema.String),
  claim_expires_at: Schema.NullOr(Schema.Number),
  claims: Schema.Number,
  end_kind: Schema.NullOr(EndKind),
  end_by: Schema.NullOr(EndBy),
  end_node_id: Schema.NullOr(Schema.String),
  end_attempt_id: Schema.NullOr(Schema.String),
  open_request_id: Schema.NullOr(Schema.String),
  wait_request_id: Schema.NullOr(Schema.String),
  step_count: Schema.Number,
  created_at: Schema.String,
  updated_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  ended_at: Schema.NullOr(Schema.String)
})

export const toRun = (row: typeof RunRow.Type): RunRecord => ({
  runId: row.run_id,
  workflowName: row.workflow_name,
  workflowRef: row.workflow_ref,
  revision: row.revision,
  sourceFingerprint: row.source_fingerprint,
  snapshot: row.snapshot_json,
  targetSessionId: row.target_session_id,
  origin: row.origin,
  input: row.input_json,
  state: row.state,
  currentNodeId: row.current_node_id,
  currentAttemptId: row.current_attempt_id,
  maxSteps: row.max_steps,
  result: row.result_json,
  error: row.error_json,
  end:
    row.end_kind === null || row.end_by === null
      ? null
      : { kind: row.end_kind, by: row.end_by, nodeId: row.end_node_id, attemptId: row.end_attempt_id },
  pauseRequested: row.pause_requested === 1,
  cancelRequested: row.cancel_requested,
  parkedReason: row.parked_reason,
  interruptions: row.interruptions,
  abort:
    row.abort_cause === null || row.abort_interruption === null
      ? null
      : {
          cause: row.abort_cause,
          nodeId: row.abort_node_id,
          attemptId: row.abort_attempt_id,
          interruption: row.abort_interruption
        },
  abortPending: row.abort_pending === 1,
  claimToken: row.claim_token,
  claimExpiresAt: row.claim_expires_at,
  claims: row.claims,
  openRequestId: row.open_request_id,
  waitRequestId: row.wait_request_id,
  stepCount: row.step_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  startedAt: row.started_at,
  endedAt: row.ended_at
})

/** A listing's row bound: at least 1, at most 1,000. */
export const boundedLimit = (limit: number) => Math.max(1, Math.min(1_000, Math.trunc(limit)))

/** The run record's columns derived from other tables, for a query over `workflow_runs r`. */
export const derivedRunColumns = (sql: SqlClient.SqlClient) =>
  sql`(SELECT q.request_id FROM workflow_requests q WHERE q.run_id = r.run_id AND q.state = 'open')
      AS open_request_id,
    (SELECT q.request_id FROM workflow_requests q JOIN workflow_waits w ON w.request_id = q.request_id
      WHERE q.run_id = r.run_id AND q.state = 'open' AND r.state = 'waiting') AS wait_request_id,
    (SELECT count(*) FROM workflow_steps s WHERE s.run_id = r.run_id AND s.outcome IS NOT NULL)
      AS step_count`

export const StepRow = Schema.Struct({
  run_id: Schema.String,
  seq: Schema.Number,
  node_id: Schema.String,
  attempt_id: Schema.String,
  timeout_ms: Schema.NullOr(Schema.Number),
  outcome: Schema.NullOr(StepOutcome),
  output_json: OptionalJson,
  error: Schema.NullOr(Schema.String),
  interrupted: Schema.NullOr(Schema.String),
  started_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String),
  runner_host: Schema.NullOr(Schema.String),
  runner_pid: Schema.NullOr(Schema.Number)
})

export const toStep = (row: typeof StepRow.Type): StepRecord => ({
  runId: row.run_id,
  seq: row.seq,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  timeoutMs: row.timeout_ms,
  outcome: row.outcome,
  output: row.output_json,
  error: row.error,
  interrupted: row.interrupted,
  startedAt: row.started_at,
  endedAt: row.ended_at,
  runner:
    row.runner_host === null || row.runner_pid === null
      ? null
      : { host: row.runner_host, pid: row.runner_pid }
})

export const RequestRow = Schema.Struct({
  request_id: Schema.String,
  run_id: Schema.String,
  node_id: Schema.String,
  attempt_id: Schema.String,
  state: Schema.Literal("open", "submitted", "closed"),
  closed_reason: Schema.NullOr(Schema.String),
  output_json: OptionalJson,
  receipt_json: Schema.NullOr(Schema.parseJson(SubmitReceipt)),
  opened_at: Schema.String,
  ended_at: Schema.NullOr(Schema.String)
})

export const toRequest = (row: typeof RequestRow.Type): RequestRecord => ({
  requestId: row.request_id,
  runId: row.run_id,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  state: row.state,
  closedReason: row.closed_reason,
  output: row.output_json,
  receipt: row.receipt_json,
  openedAt: row.opened_at,
  endedAt: row.ended_at
})

/** Statement results, decoded before anyone reads a column. */
export const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRow))
export const decodeSteps = Schema.decodeUnknown(Schema.Array(StepRow))
export const decodeRequests = Schema.decodeUnknown(Schema.Array(RequestRow))
export const decodeToken = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ claim_token: Schema.NullOr(Schema.String) }))
)
export const decodeFlags = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ pause_requested: Flag, cancel_requested: CancelBy }))
)
