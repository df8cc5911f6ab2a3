/**
 * The turn intent store's fixed statements (`../turn-intent-sql.ts`) in PostgreSQL's dialect.
 * Most differ only in placeholders (`?` → `$n`). The two claims differ in substance: under READ
 * COMMITTED, `UPDATE … WHERE intent_id IN (SELECT … LIMIT n)` lets two claimants pick the same
 * rows from their snapshots, and the second one's UPDATE, after waiting for the first one's row
 * lock, re-checks only `intent_id IN (…)` and claims them again. Locking the chosen rows in the
 * subquery (`FOR UPDATE SKIP LOCKED`) makes each claimant take rows no one else is taking, and
 * the lock re-checks the row's current version against the claimability conditions.
 */
import { SQL } from "../turn-intent-sql.ts"

/** `?` placeholders to `$1, $2, …` (the store's texts hold no `?` inside literals). */
export const numberPlaceholders = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

const claimable = (first: number) =>
  `(delivery_claim_token IS NULL OR delivery_claim_expires_at <= $${first} OR delivery_claim_token = $${first + 1})`

export const PG_CLAIMS: Readonly<Record<string, string>> = {
  [SQL.claimForRun]: `UPDATE workflow_turn_intents
    SET delivery_claim_token = $1, delivery_claim_expires_at = $2
    WHERE intent_id = (
      SELECT intent_id FROM workflow_turn_intents
      WHERE run_id = $3 AND target_session_id = $4
        AND resolved_at IS NULL
        AND ${claimable(5)}
      ORDER BY requested_at, intent_id LIMIT 1
      FOR UPDATE SKIP LOCKED)
    RETURNING *`,
  [SQL.claimEligible]: `UPDATE workflow_turn_intents
    SET delivery_claim_token = $1, delivery_claim_expires_at = $2
    WHERE intent_id IN (
      SELECT intent_id FROM workflow_turn_intents
      WHERE target_session_id = $3
        AND resolved_at IS NULL AND eligible_at IS NOT NULL
        AND ${claimable(4)}
      ORDER BY eligible_at, intent_id LIMIT $6
      FOR UPDATE SKIP LOCKED)
    RETURNING *`
}

/** A statement text as the SQLite store prepares it, in PostgreSQL's dialect. */
export const toPgDialect = (sqliteText: string): string =>
  PG_CLAIMS[sqliteText] ?? numberPlaceholders(sqliteText)
