/**
 * The row decoder works out column positions once per result shape: a result whose columns
 * come in another order (a table rebuilt so) decodes to the same intent, and a shape that is
 * not exactly the table's columns is a StoreFailure.
 */
import { describe, expect, it } from "vitest"
import { StoreFailure } from "../../src/store/store-errors.ts"
import { encodeFactsJson } from "../../src/domain/facts.ts"
import { TURN_INTENT_COLUMNS, toIntents, valuesToIntents } from "../../src/store/turn-intent-rows.ts"
import { sampleFacts } from "../support/fixtures.ts"

const row: Record<(typeof TURN_INTENT_COLUMNS)[number], unknown> = {
  intent_id: "intent-1",
  source_event_id: "source-event:1",
  run_id: "run-1",
  workflow_ref: "autoimplement",
  target_session_id: "session-1",
  cause: "failed",
  node_id: "build",
  attempt_id: null,
  fallback_facts_json: encodeFactsJson(sampleFacts()),
  requested_at: "2026-01-01T00:00:00.000Z",
  eligible_at: null,
  resolved_at: null,
  resolution: null,
  resolution_message_id: null,
  delivery_claim_token: "token",
  delivery_claim_expires_at: 42
}

const valuesIn = (columns: ReadonlyArray<(typeof TURN_INTENT_COLUMNS)[number]>) => ({
  columns,
  rows: [columns.map((column) => row[column])]
})

describe("turn intent rows as values", () => {
  it("decode the same in table order, in another order and as objects", () => {
    const inOrder = valuesToIntents("get", valuesIn(TURN_INTENT_COLUMNS))
    const reversed = valuesToIntents("get", valuesIn([...TURN_INTENT_COLUMNS].reverse()))
    expect(inOrder).not.toBeInstanceOf(StoreFailure)
    expect(reversed).toEqual(inOrder)
    expect(toIntents("get", [row])).toEqual(inOrder)
    expect(inOrder).toEqual([
      expect.objectContaining({ intentId: "intent-1", attemptId: null, deliveryClaimExpiresAt: 42 })
    ])
  })

  it("a missing, an extra or a mistyped column is a StoreFailure naming it", () => {
    const missing = valuesToIntents("get", valuesIn(TURN_INTENT_COLUMNS.slice(1)))
    expect(missing).toBeInstanceOf(StoreFailure)
    expect(missing instanceof StoreFailure && missing.message).toContain("source_event_id")
    const extra = valuesToIntents("get", {
      columns: [...TURN_INTENT_COLUMNS, "surprise"],
      rows: [[...TURN_INTENT_COLUMNS.map((column) => row[column]), "x"]]
    })
    expect(extra instanceof StoreFailure && extra.message).toContain("surprise")
    const mistyped = valuesToIntents("get", {
      columns: TURN_INTENT_COLUMNS,
      rows: [TURN_INTENT_COLUMNS.map((column) => (column === "run_id" ? 7 : row[column]))]
    })
    expect(mistyped instanceof StoreFailure && mistyped.message).toContain("run_id is not text")
  })

  it("known facts are reused only for the very text they were stored as", () => {
    const stored = valuesIn(TURN_INTENT_COLUMNS)
    const facts = { ...sampleFacts(), reason: "not what the row says" }
    const other = valuesToIntents("ensure", stored, { json: "{}", facts })
    expect(other instanceof StoreFailure ? other : other[0]?.facts).toEqual(sampleFacts())
    const same = valuesToIntents("ensure", stored, { json: encodeFactsJson(sampleFacts()), facts })
    expect(same instanceof StoreFailure ? same : same[0]?.facts).toBe(facts)
  })
})
