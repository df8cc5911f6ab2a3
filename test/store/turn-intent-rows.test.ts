/**
 * The row Schema: a row decodes by column name (whatever order the columns come in, e.g. a
 * table rebuilt so), and a row that is not exactly the table's columns, each of its type, is a
 * StoreFailure that names the column.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFactsJson } from "../../src/domain/facts.ts"
import { decodeIntents } from "../../src/store/turn-intent-store-sql.ts"
import { TURN_INTENT_COLUMNS } from "../../src/store/schema.ts"
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

const rowIn = (
  columns: ReadonlyArray<string>,
  value: (column: string) => unknown = (c) => row[c as keyof typeof row]
) => Object.fromEntries(columns.map((column) => [column, value(column)]))

const decode = decodeIntents("get")

describe("turn intent rows", () => {
  it.effect("decode the same in table order and in another order", () =>
    Effect.gen(function* () {
      const inOrder = yield* decode([rowIn(TURN_INTENT_COLUMNS)])
      const reversed = yield* decode([rowIn([...TURN_INTENT_COLUMNS].reverse())])
      expect(reversed).toEqual(inOrder)
      expect(inOrder).toEqual([
        expect.objectContaining({ intentId: "intent-1", attemptId: null, deliveryClaimExpiresAt: 42 })
      ])
      expect(inOrder[0]?.facts).toEqual(sampleFacts())
    })
  )

  it.effect("a missing, an extra or a mistyped column is a StoreFailure naming it", () =>
    Effect.gen(function* () {
      const missing = yield* Effect.flip(decode([rowIn(TURN_INTENT_COLUMNS.slice(1))]))
      expect(missing._tag).toBe("StoreFailure")
      expect(missing.message).toContain("intent_id")
      const extra = yield* Effect.flip(decode([{ ...rowIn(TURN_INTENT_COLUMNS), surprise: "x" }]))
      expect(extra._tag).toBe("StoreFailure")
      expect(extra.message).toContain("surprise")
      const mistyped = yield* Effect.flip(
        decode([
          rowIn(TURN_INTENT_COLUMNS, (column) => (column === "run_id" ? 7 : row[column as keyof typeof row]))
        ])
      )
      expect(mistyped.message).toContain("run_id")
      const badFacts = yield* Effect.flip(
        decode([{ ...rowIn(TURN_INTENT_COLUMNS), fallback_facts_json: "{}x" }])
      )
      expect(badFacts.message).toContain("fallback_facts_json")
    })
  )
})
