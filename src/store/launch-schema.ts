/**
 * DDL for run launch data: one row per run launched from a terminal turn or by `restart`. It
 * holds the run's lineage (launch_json) and, for a launch made in a terminal decision turn, the
 * turn's one reservation (terminal_run_id + tool_call_id). Rows are written once, in the same
 * transaction as the run they describe, and never change.
 */
export const launchSchemaStatements: ReadonlyArray<string> = [
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
