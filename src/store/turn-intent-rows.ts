/**
 * A stored `workflow_turn_intents` row to a TurnIntent, decoded strictly with Schema before
 * anyone sees it: exactly the table's columns (an unknown one is an error, not ignored), each of
 * its type and value set, and the facts JSON as strictly as every other facts decode.
 */
import { Effect, ParseResult, Schema } from "effect"
import { encodeFactsJson, FallbackFacts, parseStoredFacts } from "../domain/facts.ts"
import { Cause, Resolution, type TurnIntent } from "../domain/turn-intent.ts"
import { StoreFailure } from "./store-errors.ts"

/** Facts text as stored: decoded by `parseStoredFacts` (its reason is the message). */
const StoredFacts = Schema.transformOrFail(Schema.String, Schema.typeSchema(FallbackFacts), {
  strict: true,
  decode: (text, _options, ast) => {
    const facts = parseStoredFacts(text)
    return typeof facts === "string"
      ? ParseResult.fail(new ParseResult.Type(ast, text, `fallback_facts_json: ${facts}`))
      : ParseResult.succeed(facts)
  },
  encode: (facts) => ParseResult.succeed(encodeFactsJson(facts))
})

const Text = Schema.String
const TextOrNull = Schema.NullOr(Schema.String)

/** One row of `workflow_turn_intents`, column by column. */
export const TurnIntentRow = Schema.Struct({
  intent_id: Text,
  source_event_id: Text,
  run_id: Text,
  workflow_ref: Text,
  target_session_id: Text,
  cause: Cause,
  node_id: TextOrNull,
  attempt_id: TextOrNull,
  fallback_facts_json: StoredFacts,
  requested_at: Text,
  eligible_at: TextOrNull,
  resolved_at: TextOrNull,
  resolution: Schema.NullOr(Resolution),
  resolution_message_id: TextOrNull,
  delivery_claim_token: TextOrNull,
  delivery_claim_expires_at: Schema.NullOr(Schema.Number)
})

/** Every column of `workflow_turn_intents`, in table order. */
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
] as const satisfies ReadonlyArray<keyof typeof TurnIntentRow.fields>

const toIntent = (row: typeof TurnIntentRow.Type): TurnIntent => ({
  intentId: row.intent_id,
  sourceEventId: row.source_event_id,
  runId: row.run_id,
  workflowRef: row.workflow_ref,
  targetSessionId: row.target_session_id,
  cause: row.cause,
  nodeId: row.node_id,
  attemptId: row.attempt_id,
  facts: row.fallback_facts_json,
  requestedAt: row.requested_at,
  eligibleAt: row.eligible_at,
  resolvedAt: row.resolved_at,
  resolution: row.resolution,
  resolutionMessageId: row.resolution_message_id,
  deliveryClaimToken: row.delivery_claim_token,
  deliveryClaimExpiresAt: row.delivery_claim_expires_at
})

const COLUMN_COUNT = TURN_INTENT_COLUMNS.length

/** Exactly the table's column count: with every column present (the Schema checks that), no other. */
const hasOnlyTableColumns = (rows: ReadonlyArray<unknown>): boolean =>
  rows.every((row) => typeof row === "object" && row !== null && Object.keys(row).length === COLUMN_COUNT)

// The strict decode (`onExcessProperty: "error"`) costs ~9 µs more per row (docs/bench.md): rows
// with the table's column count take the plain one, any other shape the strict one, which names
// the column that does not belong.
const decodeRows = Schema.decodeUnknown(Schema.Array(TurnIntentRow))
const decodeRowsStrictly = Schema.decodeUnknown(Schema.Array(TurnIntentRow), { onExcessProperty: "error" })

/** Decode result rows; a row that does not decode is a store fault (StoreFailure), never data. */
export const decodeIntents =
  (operation: string) =>
  (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<TurnIntent>, StoreFailure> =>
    rows.length === 0
      ? Effect.succeed([])
      : Effect.mapBoth((hasOnlyTableColumns(rows) ? decodeRows : decodeRowsStrictly)(rows), {
          onFailure: (error) =>
            new StoreFailure({
              operation,
              message: `stored turn intent does not decode: ${error.message}`,
              cause: error
            }),
          onSuccess: (decoded) => decoded.map(toIntent)
        })
