/**
 * An answered abort on a run row: the row still says an abort is pending (`abort_pending = 1`),
 * but a workflow prompt of the run already resolved that abort's intent (resolution
 * `workflowPrompt`). The runner that sent the prompt clears the row right after the send; if it
 * died, lost its claim or its clear failed before that landed, the row would go on naming the
 * abort as outstanding, and the run's end would reuse an intent that is already resolved: the
 * end would get no terminal turn.
 *
 * So every write that takes the row's pending abort as outstanding — a claim (the new owner's
 * memory is read from the row), a run's end, a cancel, a handoff — first clears an answered one,
 * inside the same transaction or as its own idempotent statement: an intent resolved by a prompt
 * stays resolved, so the clear is right whenever it runs.
 *
 * The abort's intent is found by the fields its identity is derived from (run, cause, node,
 * attempt): one attempt's turn is aborted at most once for one cause, so they name one intent.
 * An ended row is never touched (what it owes is settled; reconciliation reads answered aborts
 * itself, `run-debts.ts`). Portable SQL (SQLite and PostgreSQL): null-safe equality via `coalesce`, IDs are never empty.
 */
import type * as SqlClient from "@effect/sql/SqlClient"

export const clearAnsweredAbort = (sql: SqlClient.SqlClient, runId: string) =>
  sql`UPDATE workflow_runs SET abort_pending = 0
    WHERE run_id = ${runId} AND abort_pending = 1
      AND state NOT IN ('completed', 'failed', 'timed_out', 'cancelled')
      AND EXISTS (SELECT 1 FROM workflow_turn_intents i
        WHERE i.run_id = workflow_runs.run_id AND i.cause = workflow_runs.abort_cause
          AND coalesce(i.node_id, '') = coalesce(workflow_runs.abort_node_id, '')
          AND coalesce(i.attempt_id, '') = coalesce(workflow_runs.abort_attempt_id, '')
          AND i.resolution = 'workflowPrompt')`
