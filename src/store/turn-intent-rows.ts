/**
 * A stored `workflow_turn_intents` row to a TurnIntent, decoded strictly before anyone sees it:
 * exactly the table's columns, each of its type and value set, and the facts JSON as strict as
 * every other facts decode. Plain column checks instead of a Schema struct: the same rules at
 * a seventh of the cost per row (docs/bench.md), and a row is decoded on every store call.
 */
import { StoreFailure } from "../domain/errors.ts"
import { parseStoredFacts } from "../domain/facts.ts"
import { Cause, Resolution, type TurnIntent } from "../domain/turn-intent.ts"

export const CAUSES: ReadonlySet<string> = new Set(Cause.literals)
export const RESOLUTIONS: ReadonlySet<string> = new Set(Resolution.literals)

/** Every column of `workflow_turn_intents`, in table order (rows are checked against it). */
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

class BadRow extends Error {}

type Row = Readonly<Record<string, unknown>>

const text = (row: Row, column: string): string => {
  const value = row[column]
  if (typeof value !== "string") throw new BadRow(`${column} is not text`)
  return value
}

const textOrNull = (row: Row, column: string): string | null =>
  row[column] === null ? null : text(row, column)

const isCause = (value: string): value is Cause => CAUSES.has(value)
const isResolution = (value: string): value is Resolution => RESOLUTIONS.has(value)

const cause = (row: Row): Cause => {
  const value = text(row, "cause")
  if (!isCause(value)) throw new BadRow(`cause has unknown value ${value}`)
  return value
}

const resolution = (row: Row): Resolution | null => {
  const value = textOrNull(row, "resolution")
  if (value !== null && !isResolution(value)) throw new BadRow(`resolution has unknown value ${value}`)
  return value
}

const expiresAt = (row: Row): number | null => {
  const value = row.delivery_claim_expires_at
  if (value !== null && typeof value !== "number")
    throw new BadRow("delivery_claim_expires_at is not a number")
  return value
}

const isRow = (value: unknown): value is Row => typeof value === "object" && value !== null

const decode = (value: unknown): TurnIntent => {
  if (!isRow(value)) throw new BadRow("not a row")
  // Every column is read below, so the count alone rules out extra ones.
  const keys = Object.keys(value)
  if (keys.length !== TURN_INTENT_COLUMNS.length)
    throw new BadRow(`expected ${TURN_INTENT_COLUMNS.length} columns, got ${keys.join(", ")}`)
  const facts = parseStoredFacts(text(value, "fallback_facts_json"))
  if (typeof facts === "string") throw new BadRow(`fallback_facts_json: ${facts}`)
  return {
    intentId: text(value, "intent_id"),
    sourceEventId: text(value, "source_event_id"),
    runId: text(value, "run_id"),
    workflowRef: text(value, "workflow_ref"),
    targetSessionId: text(value, "target_session_id"),
    cause: cause(value),
    nodeId: textOrNull(value, "node_id"),
    attemptId: textOrNull(value, "attempt_id"),
    facts,
    requestedAt: text(value, "requested_at"),
    eligibleAt: textOrNull(value, "eligible_at"),
    resolvedAt: textOrNull(value, "resolved_at"),
    resolution: resolution(value),
    resolutionMessageId: textOrNull(value, "resolution_message_id"),
    deliveryClaimToken: textOrNull(value, "delivery_claim_token"),
    deliveryClaimExpiresAt: expiresAt(value)
  }
}

/** Decode result rows; a row that does not decode is a store fault (StoreFailure), never data. */
export const toIntents = (operation: string, rows: ReadonlyArray<unknown>): TurnIntent[] | StoreFailure => {
  try {
    return rows.map(decode)
  } catch (error) {
    const message = error instanceof BadRow ? error.message : String(error)
    return new StoreFailure({
      operation,
      message: `stored turn intent does not decode: ${message}`,
      cause: error
    })
  }
}
