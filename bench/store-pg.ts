/**
 * The PostgreSQL column: the same store operations as `store.ts`, through our layer
 * (`layerTurnIntentStorePg`, a pool over a unix socket) and through the raw floor (one `pg`
 * client sending the very texts the layer sends, `src/store/pg/dialect-pg.ts`, with the same
 * parameters, no checks and no decoding). Plus a scaling row: the hot operations with 10^5
 * resolved intents of history in the table, against an empty one (partial indexes keep them flat).
 * Runs on a throwaway cluster (test/support/pg-cluster.ts); skipped when PostgreSQL is missing.
 */
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { layerTurnIntentStorePg } from "../src/store/pg/stores-pg.ts"
import { toPgDialect } from "../src/store/pg/dialect-pg.ts"
import { TurnIntentStore } from "../src/store/turn-intent-store.ts"
import { databaseUrl, startCluster, stopCluster } from "../test/support/pg-cluster.ts"
import { LEASE_MS, nowUs, type Workload, workload } from "./fixtures.ts"
import type { BenchContext, BenchSection, Check } from "./section.ts"
import { mark } from "./section.ts"
import { SQL, type OpName } from "./sql.ts"
import { layerPhases, OPS, GOAL_RATIO } from "./store.ts"
import { ratio, type Summary, summarize, table, us } from "./stats.ts"

const PG = {
  ensure: toPgDialect(SQL.ensure),
  list: toPgDialect(SQL.list),
  claimForRun: toPgDialect(SQL.claimForRun),
  release: toPgDialect(SQL.release),
  makeEligible: toPgDialect(SQL.makeEligible),
  probeEligible: toPgDialect(SQL.probeEligible),
  claimEligibleForSession: toPgDialect(SQL.claimEligibleForSession),
  resolve: toPgDialect(SQL.resolve)
}

const iso = (ms: number) => new Date(ms).toISOString()

type Results = Partial<Record<OpName, Summary>>

const expectOne = (op: string, count: number) => {
  if (count !== 1) throw new Error(`bench pg ${op}: expected 1 row, got ${count}`)
}

/** The floor: one client, the layer's texts and parameters. */
const rawPhases = async (
  client: pg.Client,
  plan: { ops: number; warmup: number },
  items: ReadonlyArray<Workload>
) => {
  const result: Results = {}
  const q = async (text: string, params: ReadonlyArray<unknown>) =>
    (await client.query(text, [...params])).rowCount ?? 0
  const token = (w: Workload) => `token-${w.input.runId}`
  const calls: Record<OpName, (w: Workload) => Promise<number>> = {
    ensure: (w) => {
      const now = iso(Date.now())
      const r = w.raw
      return q(PG.ensure, [
        r.intentId,
        r.sourceEventId,
        r.runId,
        r.workflowRef,
        r.targetSessionId,
        r.cause,
        r.nodeId,
        r.attemptId,
        r.factsJson,
        now,
        null
      ])
    },
    list: (w) => q(PG.list, [w.raw.targetSessionId, w.raw.runId, 10]),
    claimForRun: (w) => {
      const now = Date.now()
      return q(PG.claimForRun, [token(w), now + LEASE_MS, w.raw.runId, w.raw.targetSessionId, now, token(w)])
    },
    release: (w) => q(PG.release, [w.raw.intentId, token(w)]),
    makeEligible: (w) => q(PG.makeEligible, [iso(Date.now()), null, w.raw.intentId]),
    claimEligibleForSession: async (w) => {
      const now = Date.now()
      if ((await q(PG.probeEligible, [w.raw.targetSessionId, now, token(w)])) === 0) return 0
      return q(PG.claimEligibleForSession, [
        token(w),
        now + LEASE_MS,
        w.raw.targetSessionId,
        now,
        token(w),
        10
      ])
    },
    resolve: (w) => {
      const now = Date.now()
      return q(PG.resolve, [iso(now), "fallback", `message-${w.raw.intentId}`, w.raw.intentId, token(w), now])
    }
  }
  for (const op of OPS) {
    for (let i = 0; i < plan.warmup; i++) expectOne(op, await calls[op](items[i] as Workload))
    const samples = new Float64Array(plan.ops)
    for (let i = 0; i < plan.ops; i++) {
      const item = items[plan.warmup + i] as Workload
      const start = nowUs()
      const count = await calls[op](item)
      samples[i] = nowUs() - start
      expectOne(op, count)
    }
    result[op] = summarize(samples)
  }
  return result
}

const adminQuery = async (url: string, text: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** Our layer on `url`: every op over `items`, timed; optionally with `history` resolved rows first. */
const layerRound = (
  url: string,
  plan: { ops: number; warmup: number },
  items: ReadonlyArray<Workload>,
  history = 0
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = Context.get(yield* Layer.build(layerTurnIntentStorePg({ url })), TurnIntentStore)
        if (history > 0) {
          yield* Effect.promise(() =>
            adminQuery(
              url,
              `INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref, target_session_id,
                 cause, fallback_facts_json, requested_at, eligible_at, resolved_at, resolution, resolution_message_id)
               SELECT 'history-' || g, 'e-' || g, 'history-run-' || (g % 1000), 'w@1', 'history-session-' || (g % 100),
                 'failed', '{}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z',
                 'fallback', 'm-' || g
               FROM generate_series(1, ${history}) AS g;
               ANALYZE workflow_turn_intents`
            )
          )
        }
        const result: Results = {}
        yield* layerPhases(store, plan, items, result)
        return result
      })
    )
  )

export const storePgSection: BenchSection = {
  id: "store-pg",
  title: "Store operations on PostgreSQL",
  run: async (context: BenchContext) => {
    let cluster: ReturnType<typeof startCluster>
    try {
      cluster = startCluster()
    } catch (error) {
      return { markdown: `Skipped: ${String(error)}`, checks: [], goals: [] }
    }
    try {
      const plan = context.quick ? { ops: 50, warmup: 10 } : { ops: 500, warmup: 50 }
      const history = context.quick ? 10_000 : 100_000
      const dbs = ["bench_layer", "bench_raw", "bench_history"]
      for (const name of dbs) await adminQuery(cluster.adminUrl, `CREATE DATABASE ${name}`)
      const [layerUrl, rawUrl, historyUrl] = dbs.map((name) => databaseUrl(cluster.adminUrl, name)) as [
        string,
        string,
        string
      ]
      const items = Array.from({ length: plan.ops + plan.warmup }, (_, i) => workload("pg", i))
      context.log("store-pg: layer")
      const layer = await layerRound(layerUrl, plan, items)
      context.log("store-pg: raw")
      // The raw side gets the same schema from the layer, then the floor runs on its own client.
      await Effect.runPromise(Effect.scoped(Layer.build(layerTurnIntentStorePg({ url: rawUrl }))))
      const client = new pg.Client({ connectionString: rawUrl })
      await client.connect()
      const raw = await rawPhases(client, plan, items).finally(() => client.end())
      context.log(`store-pg: ${history} resolved rows of history`)
      const withHistory = await layerRound(historyUrl, plan, items, history)
      const rows = OPS.map((op) => {
        const l = layer[op]?.median ?? Number.NaN
        const r = raw[op]?.median ?? Number.NaN
        const h = withHistory[op]?.median ?? Number.NaN
        return [op, us(r), us(l), ratio(l / r), us(h), ratio(h / l)]
      })
      const goals: Array<Check> = OPS.map((op) => {
        const value = (layer[op]?.median ?? Number.NaN) / (raw[op]?.median ?? Number.NaN)
        return { name: `pg ${op}: layer/raw ≤ ${GOAL_RATIO}`, ok: value <= GOAL_RATIO, detail: ratio(value) }
      })
      const scaling = OPS.map((op) => {
        const value = (withHistory[op]?.median ?? Number.NaN) / (layer[op]?.median ?? Number.NaN)
        return {
          name: `pg ${op}: ${history} resolved rows ≤ 1.5× empty`,
          ok: value <= 1.5,
          detail: ratio(value)
        }
      })
      const markdown = [
        `Medians over ${plan.ops} ops each (after ${plan.warmup} untimed), local server over a unix socket, ` +
          "`fsync=off` (a test cluster: durability costs are not measured here). Raw = one `pg` client sending " +
          "the layer's own PostgreSQL texts; layer = `layerTurnIntentStorePg` (pool, checks, row decoding). " +
          `The last two columns: the layer again with ${history.toLocaleString("en")} resolved intents in the table.`,
        "",
        table(
          [
            "op",
            "raw pg median",
            "layer median",
            "layer/raw",
            `layer median, ${history} resolved`,
            "vs empty"
          ],
          rows
        ),
        "",
        [...goals, ...scaling].map((g) => `- ${mark(g.ok)} ${g.name}: ${g.detail}`).join("\n")
      ].join("\n")
      return { markdown, checks: [], goals: [...goals, ...scaling] }
    } finally {
      stopCluster(cluster)
    }
  }
}
