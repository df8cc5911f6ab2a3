/**
 * The statements of the SQLite TurnIntentStore, one text each. Kept apart so the store reads as
 * operations and the bench (`npm run bench`) times exactly these texts against its raw floor.
 *
 * A row limit is part of the text (`LIMIT 10`), never a bound parameter: on SQLite 3.53 a
 * rebound `LIMIT ?` costs ~13 µs per call (the planner re-plans), a constant one nothing. The
 * limit is a validated integer (1…MAX_LIST_LIMIT), and each distinct text is prepared once.
 */

/** Every statement the store prepares (exported so `npm run bench` times the very same texts). */
export const SQL = {
  insert: `INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
      target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (intent_id) DO NOTHING
    RETURNING *`,
  select: "SELECT * FROM workflow_turn_intents WHERE intent_id = ?",
  markEligible: `UPDATE workflow_turn_intents
    SET eligible_at = coalesce(eligible_at, ?),
        fallback_facts_json = coalesce(?, fallback_facts_json)
    WHERE intent_id = ? AND resolved_at IS NULL
    RETURNING *`,
  claimForRun: `UPDATE workflow_turn_intents
    SET delivery_claim_token = ?, delivery_claim_expires_at = ?
    WHERE intent_id = (
      SELECT intent_id FROM workflow_turn_intents
      WHERE run_id = ? AND target_session_id = ?
        AND resolved_at IS NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ?
          OR delivery_claim_token = ?)
      ORDER BY requested_at, intent_id LIMIT 1)
    RETURNING *`,
  // An UPDATE that matches nothing still takes the file's write lock and commits; most sync
  // passes find nothing, so they first ask the same partial index, read-only (~3 µs instead of
  // ~20). Safe without a transaction: an intent that becomes claimable right after the probe is
  // the next pass's, as if this pass had run a moment earlier; the UPDATE stays conditional.
  probeEligible: `SELECT 1 FROM workflow_turn_intents
    WHERE target_session_id = ? AND resolved_at IS NULL AND eligible_at IS NOT NULL
      AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ? OR delivery_claim_token = ?)
    LIMIT 1`,
  resolve: `UPDATE workflow_turn_intents
    SET resolved_at = ?, resolution = ?,
        resolution_message_id = ?
    WHERE intent_id = ? AND resolved_at IS NULL
      AND delivery_claim_token = ? AND delivery_claim_expires_at > ?
    RETURNING *`,
  // Extends the caller's own claim; like a claim by the same token, it also takes back a claim
  // whose lease ran out while no one else claimed it (the token would differ then).
  renew: `UPDATE workflow_turn_intents
    SET delivery_claim_expires_at = ?
    WHERE intent_id = ? AND delivery_claim_token = ?
      AND resolved_at IS NULL
    RETURNING intent_id`,
  release: `UPDATE workflow_turn_intents
    SET delivery_claim_token = NULL, delivery_claim_expires_at = NULL
    WHERE intent_id = ? AND delivery_claim_token = ?
      AND resolved_at IS NULL
    RETURNING intent_id`
} as const

/** Claim up to `limit` eligible intents of a session (`limit`: a validated integer). */
export const claimEligibleSql = (limit: number): string => `UPDATE workflow_turn_intents
    SET delivery_claim_token = ?, delivery_claim_expires_at = ?
    WHERE intent_id IN (
      SELECT intent_id FROM workflow_turn_intents
      WHERE target_session_id = ?
        AND resolved_at IS NULL AND eligible_at IS NOT NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ?
          OR delivery_claim_token = ?)
      ORDER BY eligible_at, intent_id LIMIT ${limitLiteral(limit)})
    RETURNING *`

/** A limit as SQL text; anything but a positive safe integer is a bug of the caller. */
const limitLiteral = (limit: number): string => {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`invalid SQL limit ${limit}`)
  return String(limit)
}

/** `list` filters: one SQL text per combination (and limit), in the order the clauses appear. */
export const listSql = (
  session: boolean,
  run: boolean,
  state: "pending" | "eligible" | "resolved" | "all",
  limit: number
): string => {
  const where = [
    ...(session ? ["target_session_id = ?"] : []),
    ...(run ? ["run_id = ?"] : []),
    ...(state === "pending"
      ? ["resolved_at IS NULL"]
      : state === "eligible"
        ? ["resolved_at IS NULL", "eligible_at IS NOT NULL"]
        : state === "resolved"
          ? ["resolved_at IS NOT NULL"]
          : [])
  ]
  return `SELECT * FROM workflow_turn_intents WHERE ${where.length === 0 ? "1=1" : `(${where.join(" AND ")})`}
    ORDER BY requested_at, intent_id LIMIT ${limitLiteral(limit)}`
}
