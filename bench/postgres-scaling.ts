/**
 * The PostgreSQL claims with 10² vs 10⁵ resolved intents of history, raw client against the
 * layer, over the workload bench/scaling.ts times on SQLite (scaling-workload.ts).
 */
import { Effect } from "effect"
import type pg from "pg"
import { nowUs } from "./fixtures.ts"
import { connect, type Plan, RawPg, withPgStore } from "./postgres-sides.ts"
import {
  checkCount,
  historyInsert,
  historyRows,
  layerCall,
  SCALE_OPS,
  type ScaleOp,
  TARGETS,
  token
} from "./scaling-workload.ts"
import { combineRounds, type Summary, summarize } from "./stats.ts"

/** The history bench/scaling.ts stores (scaling-workload.ts), in batched multi-row INSERTs. */
export const populate = async (client: pg.Client, history: number) => {
  const rows = [...historyRows(history)]
  // One transaction of 1,000-row INSERTs: 10⁵ rows in seconds.
  await client.query("BEGIN")
  for (let start = 0; start < rows.length; start += 1_000) {
    const batch = rows.slice(start, start + 1_000)
    await client.query(
      historyInsert((p) => `$${p + 1}`, batch.length),
      batch.flat()
    )
  }
  await client.query("COMMIT")
  await client.query("ANALYZE workflow_turn_intents")
}

const scaleRawCall = (raw: RawPg, op: ScaleOp, k: number) =>
  op === "claimForRun"
    ? raw.claimForRun(`claim-run-${k}`, `claim-session-${k}`, token(k))
    : raw.claimEligibleForSession(`${op === "syncPass" ? "idle" : "eligible"}-session-${k}`, token(k))

export type Side = "raw" | "layer"

/** Re-claims by the same claimant are idempotent, so one target set serves every call. */
export const measureScale = async (url: string, plan: Plan, rounds: number) => {
  const raw = new RawPg(await connect(url))
  const samples: Record<ScaleOp, Record<Side, Array<Summary>>> = {
    syncPass: { raw: [], layer: [] },
    claimEligibleForSession: { raw: [], layer: [] },
    claimForRun: { raw: [], layer: [] }
  }
  try {
    await withPgStore(url, (store) =>
      Effect.gen(function* () {
        const time = (side: Side, op: ScaleOp) =>
          Effect.gen(function* () {
            const call = (k: number) =>
              side === "raw" ? Effect.promise(() => scaleRawCall(raw, op, k)) : layerCall(store, op, k)
            for (let i = 0; i < plan.warmup; i++) checkCount(op, yield* call(i % TARGETS))
            const out = new Float64Array(plan.ops)
            for (let i = 0; i < plan.ops; i++) {
              const start = nowUs()
              const count = yield* call(i % TARGETS)
              out[i] = nowUs() - start
              checkCount(op, count)
            }
            samples[op][side].push(summarize(out))
          })
        for (let round = 0; round < rounds; round++) {
          for (const op of SCALE_OPS) {
            yield* time(round % 2 === 0 ? "raw" : "layer", op)
            yield* time(round % 2 === 0 ? "layer" : "raw", op)
          }
        }
      })
    )
  } finally {
    await raw.client.end()
  }
  return Object.fromEntries(
    SCALE_OPS.map((op) => [
      op,
      { raw: combineRounds(samples[op].raw), layer: combineRounds(samples[op].layer) }
    ])
  ) as Record<ScaleOp, Record<Side, Summary>>
}
