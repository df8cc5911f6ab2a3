/**
 * The PostgreSQL claims with 10² vs 10⁵ resolved intents of history, raw client against the
 * layer, over the workload bench/scaling.ts times on SQLite (scaling-workload.ts).
 */
import { Effect } from "effect"
import type pg from "pg"
import { factsFor, nowUs } from "./fixtures.ts"
import { connect, iso, type Plan, RawPg, withPgStore } from "./postgres-sides.ts"
import {
  checkCount,
  idFor,
  layerCall,
  OTHER_PENDING,
  SCALE_OPS,
  type ScaleOp,
  TARGETS,
  token
} from "./scaling-workload.ts"
import { combineRounds, type Summary, summarize } from "./stats.ts"

/** As bench/scaling.ts: history over the very sessions and runs being claimed, plus other pending. */
export const populate = async (client: pg.Client, history: number) => {
  const facts = JSON.stringify(factsFor("history", "node-1"))
  const rows: Array<ReadonlyArray<unknown>> = []
  const at = (offset: number) => iso(Date.UTC(2026, 0, 1) + offset)
  const row = (
    tag: string,
    run: string,
    session: string,
    when: number,
    eligible: boolean,
    resolved: boolean
  ) =>
    rows.push([
      idFor(tag),
      `source-${tag}`,
      run,
      session,
      facts,
      at(when),
      eligible ? at(when + 1) : null,
      resolved ? at(when + 2) : null,
      resolved ? "fallback" : null,
      resolved ? `message-${tag}` : null
    ])
  const kinds = ["idle", "eligible", "claim"]
  for (let h = 0; h < history; h++) {
    const kind = kinds[h % 3] ?? "idle"
    const k = Math.floor(h / 3) % TARGETS
    row(`history-${h}`, `${kind}-run-${k}`, `${kind}-session-${k}`, h, true, true)
  }
  for (let j = 0; j < OTHER_PENDING; j++) {
    row(`other-${j}`, `other-run-${j}`, `other-session-${j % 100}`, history + j, true, false)
  }
  for (let k = 0; k < TARGETS; k++) {
    row(
      `eligible-${k}`,
      `eligible-run-${k}`,
      `eligible-session-${k}`,
      history + OTHER_PENDING + k,
      true,
      false
    )
    row(`claim-${k}`, `claim-run-${k}`, `claim-session-${k}`, history + OTHER_PENDING + k, false, false)
  }
  // Batched multi-row INSERTs in one transaction: 10⁵ rows in seconds.
  await client.query("BEGIN")
  for (let start = 0; start < rows.length; start += 1_000) {
    const batch = rows.slice(start, start + 1_000)
    const values = batch.map(
      (_, i) =>
        `(${Array.from({ length: 10 }, (_, c) => `$${i * 10 + c + 1}`)
          .map((p, c) =>
            c === 4 ? `${p}, 'review-and-fix@1', 'agentCancelled', 'node-1', 'node-1-attempt-1'` : p
          )
          .join(", ")})`
    )
    await client.query(
      `INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, target_session_id,
       fallback_facts_json, workflow_ref, cause, node_id, attempt_id, requested_at, eligible_at, resolved_at,
       resolution, resolution_message_id) VALUES ${values.join(", ")}`,
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
