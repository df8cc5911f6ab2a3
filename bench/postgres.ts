/**
 * The PostgreSQL column: the store bench's walk (ensure → list → claimForRun → release →
 * makeEligible → claimEligibleForSession → resolve) through `layerTurnIntentStorePg` against the
 * same SQL on a raw `pg` client in the same run, and the claims with 10² vs 10⁵ resolved intents
 * of history (postgres-scaling.ts). The bench starts its own throwaway cluster (test/support/pg-cluster.ts, unix socket
 * in a temp directory, fsync off) and skips this section with one line when initdb is missing.
 */
import { Effect } from "effect"
import type pg from "pg"
import { type Cluster, databaseUrl, startCluster, stopCluster } from "../test/support/pg-cluster.ts"
import { nowUs, type Workload, workload } from "./fixtures.ts"
import { measureScale, populate, type Side } from "./postgres-scaling.ts"
import { GROWTH_LIMIT, OTHER_PENDING, SCALE_OPS } from "./scaling-workload.ts"
import { connect, type Plan, RawPg, schemaUrl, withPgStore } from "./postgres-sides.ts"
import { type BenchSection, type Check, mark } from "./section.ts"
import type { OpName } from "./sql.ts"
import { breakdownTable, measureBreakdown } from "./postgres-breakdown.ts"
import { layerPhases, OPS } from "./store.ts"
import { combineRounds, ratio, type Summary, summarize, table, us } from "./stats.ts"

type RoundResult = Record<OpName, Summary>

const GOAL_RATIO = 1.5

const expectOne = (op: OpName, count: number) => {
  if (count !== 1) throw new Error(`bench postgres ${op}: expected 1 row, got ${count}`)
}

const rawRound = async (url: string, plan: Plan, items: ReadonlyArray<Workload>): Promise<RoundResult> => {
  const raw = new RawPg(await connect(url))
  const result: Partial<RoundResult> = {}
  const token = (w: Workload) => `token-${w.raw.runId}`
  const phase = async (op: OpName, call: (w: Workload) => Promise<number>) => {
    for (let i = 0; i < plan.warmup; i++) expectOne(op, await call(items[i] as Workload))
    const samples = new Float64Array(plan.ops)
    for (let i = 0; i < plan.ops; i++) {
      const w = items[plan.warmup + i] as Workload
      const start = nowUs()
      const count = await call(w)
      samples[i] = nowUs() - start
      expectOne(op, count)
    }
    result[op] = summarize(samples)
  }
  try {
    await phase("ensure", (w) => raw.ensure(w))
    await phase("get", (w) => raw.get(w.raw.intentId))
    await phase("list", (w) => raw.list(w.raw.targetSessionId, w.raw.runId))
    await phase("claimForRun", (w) => raw.claimForRun(w.raw.runId, w.raw.targetSessionId, token(w)))
    await phase("release", (w) => raw.release(w.raw.intentId, token(w)))
    await phase("makeEligible", (w) => raw.makeEligible(w.raw.intentId))
    await phase("claimEligibleForSession", (w) =>
      raw.claimEligibleForSession(w.raw.targetSessionId, token(w))
    )
    await phase("resolve", (w) => raw.resolve(w.raw.intentId, token(w)))
  } finally {
    await raw.client.end()
  }
  return result as RoundResult
}

const layerRound = (url: string, plan: Plan, items: ReadonlyArray<Workload>) =>
  withPgStore(url, (store) =>
    Effect.map(
      Effect.suspend(() => {
        const result: Partial<RoundResult> = {}
        return Effect.as(layerPhases(store, plan, items, result), result)
      }),
      (result) => result as RoundResult
    )
  )

/** A fresh schema with the controller tables (created by the layer's migration) per side and round. */
const freshSchema = async (base: string, admin: pg.Client, name: string) => {
  await admin.query(`CREATE SCHEMA ${name}`)
  const url = schemaUrl(base, name)
  await withPgStore(url, () => Effect.void)
  return url
}

const pair = (s: Summary) => `${us(s.median)} / ${us(s.p99)}`

const serverVersion = async (url: string) => {
  const client = await connect(url)
  try {
    const rows: ReadonlyArray<{ readonly v?: unknown }> = (
      await client.query("SELECT current_setting('server_version') AS v")
    ).rows
    return String(rows[0]?.v ?? "?")
  } finally {
    await client.end()
  }
}

export const postgresSection: BenchSection = {
  id: "postgres",
  title: "PostgreSQL: layerTurnIntentStorePg vs. raw pg, and scaling",
  run: async (context) => {
    let cluster: Cluster
    try {
      cluster = startCluster()
    } catch (error) {
      const line = `Skipped: no PostgreSQL server binaries here (${error instanceof Error ? error.message : String(error)}).`
      context.log(`  ${line}`)
      return { markdown: line, checks: [], goals: [] }
    }
    try {
      const admin = await connect(cluster.adminUrl)
      await admin.query("CREATE DATABASE bench")
      await admin.end()
      const base = databaseUrl(cluster.adminUrl, "bench")
      const benchAdmin = await connect(base)
      const version = await serverVersion(base)
      const plan: Plan = context.quick ? { ops: 200, warmup: 50 } : { ops: 1_000, warmup: 200 }
      const rounds = 3
      const items = Array.from({ length: plan.warmup + plan.ops }, (_, i) => workload("pg-bench", i))
      const results: Record<Side, Array<RoundResult>> = { raw: [], layer: [] }
      for (let round = 0; round < rounds; round++) {
        const sides: ReadonlyArray<Side> = round % 2 === 0 ? ["raw", "layer"] : ["layer", "raw"]
        for (const side of sides) {
          const url = await freshSchema(base, benchAdmin, `${side}_${round}`)
          results[side].push(
            side === "raw" ? await rawRound(url, plan, items) : await layerRound(url, plan, items)
          )
        }
        context.log(`  postgres ops: round ${round + 1}/${rounds} done`)
      }
      const combine = (rs: ReadonlyArray<RoundResult>) =>
        Object.fromEntries(OPS.map((op) => [op, combineRounds(rs.map((r) => r[op]))])) as RoundResult
      const raw = combine(results.raw)
      const layer = combine(results.layer)
      const goals: Array<Check> = []
      const opRows = OPS.map((op) => {
        const r = layer[op].median / raw[op].median
        goals.push({
          name: `PostgreSQL ${op} ≤ ${GOAL_RATIO}× raw pg`,
          ok: r <= GOAL_RATIO,
          detail: `${ratio(r)} (${us(layer[op].median)} vs ${us(raw[op].median)} µs)`
        })
        return [
          `\`${op}\``,
          pair(raw[op]),
          pair(layer[op]),
          `${ratio(r)} (${ratio(layer[op].p99 / raw[op].p99)})`,
          mark(r <= GOAL_RATIO)
        ]
      })

      const breakdown = await measureBreakdown(await freshSchema(base, benchAdmin, "breakdown"), plan, rounds)
      context.log("  postgres breakdown done")

      const sizes = context.quick ? [100, 10_000] : [100, 100_000]
      const scalePlan: Plan = context.quick ? { ops: 100, warmup: 20 } : { ops: 500, warmup: 100 }
      const scaled: Array<{ size: number; measured: Awaited<ReturnType<typeof measureScale>> }> = []
      for (const size of sizes) {
        const url = await freshSchema(base, benchAdmin, `scaling_${size}`)
        const client = await connect(url)
        const started = Date.now()
        await populate(client, size)
        await client.end()
        context.log(`  postgres scaling ${size}: populated in ${Date.now() - started} ms`)
        scaled.push({ size, measured: await measureScale(url, scalePlan, 3) })
      }
      await benchAdmin.end()
      const first = scaled[0]
      const last = scaled.at(-1)
      const scaleRows: Array<ReadonlyArray<string>> = []
      const checks: Array<Check> = []
      if (first !== undefined && last !== undefined) {
        for (const op of SCALE_OPS) {
          const growthRaw = last.measured[op].raw.median / first.measured[op].raw.median
          const growthLayer = last.measured[op].layer.median / first.measured[op].layer.median
          const ok = growthLayer <= GROWTH_LIMIT
          goals.push({
            name: `PostgreSQL ${op}: cost flat from ${first.size.toLocaleString("en")} to ${last.size.toLocaleString("en")} resolved`,
            ok,
            detail: `layer ${ratio(growthLayer)}, raw ${ratio(growthRaw)}`
          })
          scaleRows.push([
            op === "syncPass" ? "sync pass, nothing eligible" : `\`${op}\``,
            ...scaled.map((s) => `${us(s.measured[op].raw.median)} / ${us(s.measured[op].layer.median)}`),
            `${ratio(growthRaw)} / ${ratio(growthLayer)}`,
            mark(ok)
          ])
        }
      }
      const markdown = [
        `PostgreSQL ${version} on a throwaway cluster this run started (unix socket, \`fsync=off\`, ` +
          "`synchronous_commit=off`: the cluster the tests use; a durable server adds its commit cost to both sides). " +
          `Per-op latency in µs (median / p99): ${plan.ops.toLocaleString("en")} timed ops per op after ${plan.warmup} untimed, ` +
          "median of 3 rounds (sides alternate first), a fresh schema per side and round. The layer is " +
          "`layerTurnIntentStorePg` (a pool, each call timed inside one fiber); the floor is one plain `pg` client " +
          "running the same statements in PostgreSQL's dialect (`toPgDialect` of the SQLite texts, the claims with " +
          "`FOR UPDATE SKIP LOCKED`), as named prepared statements like the layer's, with the same parameters. The " +
          "SQLite rows of the same ops are in the first section.",
        "",
        table(["op", "raw pg", "layer (PostgreSQL)", "ratio med (p99)", `≤ ${GOAL_RATIO}×`], opRows),
        "",
        "Where a call's time goes (bench/postgres-breakdown.ts): one `get` along each step from a plain client " +
          `to the store, ${plan.ops.toLocaleString("en")} timed calls per step after ${plan.warmup} untimed, median of ` +
          `${rounds} rounds (steps in rotating order), one schema.`,
        "",
        breakdownTable(breakdown),
        "",
        `Scaling: the claims with ${sizes.map((s) => s.toLocaleString("en")).join(" vs ")} resolved intents of history ` +
          `over the very sessions and runs being claimed, plus ${OTHER_PENDING.toLocaleString("en")} pending intents of ` +
          `other sessions (as the SQLite scaling section); ${scalePlan.ops} timed calls, median of 3 rounds; µs raw / layer.`,
        "",
        table(
          [
            "op",
            ...sizes.map((s) => `${s.toLocaleString("en")} resolved`),
            "growth raw / layer",
            `layer flat (≤ ${GROWTH_LIMIT}×)`
          ],
          scaleRows
        )
      ].join("\n")
      return { markdown, checks, goals }
    } finally {
      stopCluster(cluster)
    }
  }
}
