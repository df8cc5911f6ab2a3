/**
 * DDL of the controller database, `pi-workflows.controller-store.v1`. Every statement is
 * idempotent; opening a store runs them all in one immediate transaction.
 */
import { launchSchemaStatements } from "./launch-schema.ts"
import { notificationSchemaStatements } from "./notification-schema.ts"
import { runSchemaStatements } from "./run-schema.ts"

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

export const controllerSchemaStatements: ReadonlyArray<string> = [
  metadata,
  notifications,
  turnIntents,
  pendingByRun,
  eligibleBySession,
  resolvedImmutable,
  identityImmutable,
  ...runSchemaStatements,
  ...notificationSchemaStatements,
  ...launchSchemaStatements
]
