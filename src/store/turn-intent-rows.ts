/**
 * A stored `workflow_turn_intents` row to a TurnIntent, decoded strictly before anyone sees it:
 * exactly the table's columns, each of its type and value set, and the facts JSON through the
 * same Schema as every other facts decode. A row is decoded on every store call, so the column
 * checks are plain code, and rows arrive as value arrays (docs/bench.md): the column positions
 * of a result shape are worked out once per shape, not once per row.
 */
import { StoreFailure } from "./store-errors.ts"
import { type FallbackFacts, parseStoredFacts } from "../domain/facts.ts"
import { Cause, Resolution, type TurnIntent } from "../domain/turn-intent.ts"
import type { ValueRows } from "./database.ts"

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

const COLUMN_COUNT = TURN_INTENT_COLUMNS.length

/** Facts the caller just validated and stored as `json`: a returned row with that text reuses them. */
export interface KnownFacts {
  readonly json: string
  readonly facts: FallbackFacts
}

class BadRow extends Error {}

const isCause = (value: string): value is Cause => CAUSES.has(value)
const isResolution = (value: string): value is Resolution => RESOLUTIONS.has(value)

/** Where each TURN_INTENT_COLUMNS entry sits in a row of this shape; BadRow for any other shape. */
const positionsOf = (columns: ReadonlyArray<string>): ReadonlyArray<number> | undefined => {
  const at = TURN_INTENT_COLUMNS.map((column) => columns.indexOf(column))
  // All present and no more: a column this version does not know is a fault, not ignored.
  if (columns.length !== COLUMN_COUNT || at.includes(-1))
    throw new BadRow(`expected the ${COLUMN_COUNT} turn intent columns, got ${columns.join(", ")}`)
  // Table order (the usual case): the row is used as it is.
  return at.every((position, index) => position === index) ? undefined : at
}

// Compiled once per result shape: the fast path hands the same columns array on every call.
const shapes = new WeakMap<ReadonlyArray<string>, { readonly at: ReadonlyArray<number> | undefined }>()
const positions = (columns: ReadonlyArray<string>): ReadonlyArray<number> | undefined => {
  let shape = shapes.get(columns)
  if (shape === undefined) {
    shape = { at: positionsOf(columns) }
    shapes.set(columns, shape)
  }
  return shape.at
}

const text = (value: unknown, column: number): string => {
  if (typeof value !== "string") throw new BadRow(`${TURN_INTENT_COLUMNS[column]} is not text`)
  return value
}

const textOrNull = (value: unknown, column: number): string | null =>
  value === null ? null : text(value, column)

/** One row's values in TURN_INTENT_COLUMNS order. */
const decodeValues = (values: ReadonlyArray<unknown>, known: KnownFacts | undefined): TurnIntent => {
  if (values.length !== COLUMN_COUNT)
    throw new BadRow(`expected ${COLUMN_COUNT} columns, got a row of ${values.length} values`)
  const cause = text(values[5], 5)
  if (!isCause(cause)) throw new BadRow(`cause has unknown value ${cause}`)
  const resolution = textOrNull(values[12], 12)
  if (resolution !== null && !isResolution(resolution))
    throw new BadRow(`resolution has unknown value ${resolution}`)
  const expiresAt = values[15]
  if (expiresAt !== null && typeof expiresAt !== "number")
    throw new BadRow("delivery_claim_expires_at is not a number")
  const factsText = text(values[8], 8)
  // The same text decodes to the same facts: a row just written from validated facts skips it.
  const facts = known !== undefined && known.json === factsText ? known.facts : parseStoredFacts(factsText)
  if (typeof facts === "string") throw new BadRow(`fallback_facts_json: ${facts}`)
  return {
    intentId: text(values[0], 0),
    sourceEventId: text(values[1], 1),
    runId: text(values[2], 2),
    workflowRef: text(values[3], 3),
    targetSessionId: text(values[4], 4),
    cause,
    nodeId: textOrNull(values[6], 6),
    attemptId: textOrNull(values[7], 7),
    facts,
    requestedAt: text(values[9], 9),
    eligibleAt: textOrNull(values[10], 10),
    resolvedAt: textOrNull(values[11], 11),
    resolution,
    resolutionMessageId: textOrNull(values[13], 13),
    deliveryClaimToken: textOrNull(values[14], 14),
    deliveryClaimExpiresAt: expiresAt
  }
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null

/** An object row (the SqlClient's form): its values by column name, then the same checks. */
const decodeObject = (row: unknown): TurnIntent => {
  if (!isRecord(row)) throw new BadRow("not a row")
  positionsOf(Object.keys(row))
  return decodeValues(
    TURN_INTENT_COLUMNS.map((column) => row[column]),
    undefined
  )
}

const failure = (operation: string, error: unknown): StoreFailure =>
  new StoreFailure({
    operation,
    message: `stored turn intent does not decode: ${error instanceof BadRow ? error.message : String(error)}`,
    cause: error
  })

/** Decode object rows; a row that does not decode is a store fault (StoreFailure), never data. */
export const toIntents = (operation: string, rows: ReadonlyArray<unknown>): TurnIntent[] | StoreFailure => {
  try {
    return rows.map(decodeObject)
  } catch (error) {
    return failure(operation, error)
  }
}

/** Decode value rows (the Database's fast path); the same checks and failures as `toIntents`. */
export const valuesToIntents = (
  operation: string,
  result: ValueRows,
  known?: KnownFacts
): TurnIntent[] | StoreFailure => {
  try {
    if (result.rows.length === 0) return []
    const at = positions(result.columns)
    return result.rows.map((row) =>
      decodeValues(at === undefined ? row : at.map((position) => row[position]), known)
    )
  } catch (error) {
    return failure(operation, error)
  }
}
