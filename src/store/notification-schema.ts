/**
 * Indexes of `workflow_notifications` (the table itself is in schema.ts, unchanged since the
 * alpha contract). Both are additive: an older file gains them on open, and nothing else changes.
 */

// Pending rows by owner session: what delivery at session start and after a write reads. Partial,
// so it does not grow with delivered history.
const pendingBySession = `CREATE INDEX IF NOT EXISTS workflow_notifications_pending_by_session
  ON workflow_notifications (target_session_id, created_at)
  WHERE delivered_at IS NULL`

// A run's notifications by kind and time: the rate window and the status line.
const byRun = `CREATE INDEX IF NOT EXISTS workflow_notifications_by_run
  ON workflow_notifications (run_id, kind, created_at)`

export const notificationSchemaStatements: ReadonlyArray<string> = [pendingBySession, byRun]
