/**
 * SQL parity for the store bench: the statements the layer sends per op, checked against the
 * raw floor's texts, so the two sides are known to measure the same work.
 */
import { join } from "node:path"
import { SqlClient, Statement } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { Database } from "../src/store/database.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sqlite.ts"
import { LEASE_MS, workload } from "./fixtures.ts"
import type { BenchContext, Check } from "./section.ts"
import { normalizeSql, type OpName, openRaw, SENT } from "./sql.ts"

/**
 * Which statements the layer really sends per op, vs. the raw side's texts. Outside a
 * transaction the store steps prepared statements directly, past @effect/sql; inside one it
 * sends the very same texts through the SqlClient, where a statement transformer sees them.
 */
export const sqlParity = async (context: BenchContext): Promise<ReadonlyArray<Check>> => {
  const sent: Array<string> = []
  const capture = Statement.withTransformer((statement) =>
    Effect.sync(() => {
      sent.push(statement.compile()[0])
      return statement
    })
  )
  const w = workload("parity", 0)
  const token = "parity-token"
  const calls: ReadonlyArray<
    readonly [OpName, (store: TurnIntentStoreService) => Effect.Effect<unknown, unknown>]
  > = [
    ["ensure", (s) => s.ensure(w.input)],
    ["get", (s) => s.get(w.raw.intentId)],
    [
      "list",
      (s) =>
        s.list({
          targetSessionId: w.input.targetSessionId,
          runId: w.input.runId,
          state: "pending",
          limit: 10
        })
    ],
    [
      "claimForRun",
      (s) =>
        s.claimForRun({
          runId: w.input.runId,
          targetSessionId: w.input.targetSessionId,
          token,
          leaseMs: LEASE_MS
        })
    ],
    ["release", (s) => s.release({ intentId: w.raw.intentId, token })],
    ["makeEligible", (s) => s.makeEligible({ intentId: w.raw.intentId })],
    [
      "claimEligibleForSession",
      (s) =>
        s.claimEligibleForSession({
          targetSessionId: w.input.targetSessionId,
          token,
          leaseMs: LEASE_MS,
          limit: 10
        })
    ],
    [
      "resolve",
      (s) =>
        s.resolve({ intentId: w.raw.intentId, token, resolution: "fallback", messageId: "parity-message" })
    ]
  ]
  return Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const filename = join(context.tempRoot, "parity.db")
        const layerContext = yield* Layer.build(layerSqlite({ filename }))
        const store = Context.get(layerContext, TurnIntentStore)
        const sql = Context.get(layerContext, SqlClient.SqlClient)
        const database = Context.get(layerContext, Database)
        const checks: Array<Check> = []
        // Both sides must run with the same connection settings, or the ratio compares setups.
        const raw = openRaw(join(context.tempRoot, "parity-raw.db"))
        for (const pragma of ["journal_mode", "synchronous", "busy_timeout", "foreign_keys"]) {
          const layerValue = String(Object.values((yield* sql.unsafe(`PRAGMA ${pragma}`))[0] ?? {})[0])
          const rawValue = String(raw.pragma(pragma, { simple: true }))
          checks.push({
            name: `pragma parity: ${pragma}`,
            ok: layerValue === rawValue,
            detail: `layer ${layerValue}, raw ${rawValue}`
          })
        }
        raw.close()
        for (const [op, call] of calls) {
          sent.length = 0
          yield* capture(database.immediate(call(store)))
          const expected = SENT[op].map(normalizeSql)
          const same =
            sent.length === expected.length && sent.every((text, i) => normalizeSql(text) === expected[i])
          checks.push({
            name: `SQL parity: ${op}`,
            ok: same,
            detail: same
              ? `layer sends ${expected.length === 1 ? "one statement" : `${expected.length} statements`}, the raw floor's text${expected.length === 1 ? "" : "s"}`
              : `layer sent ${sent.length} statement(s): ${sent.map(normalizeSql).join(" ;; ")}`
          })
        }
        return checks
      })
    )
  )
}
