/**
 * The PostgreSQL column: the store bench's walk (ensure → list → claimForRun → release →
 * makeEligible → claimEligibleForSession → resolve) through `layerTurnIntentStorePg` against the
 * same SQL on a raw `pg` client in the same run, and the claims with 10² vs 10⁵ resolved intents
 * of history. The bench starts its own throwaway cluster (test/support/pg-cluster.ts, unix socket
 * in a temp directory, fsync off) and skips this section with one line when initdb is missing.
 */
import { createHash } from "node:crypto"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { toPgDialect } from "../src/store/pg/dialect-pg.ts"
import { layerTurnIntentStorePg } from "../src/store/pg/stores-pg.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { type Cluster, databaseUrl, startCluster, stopCluster } from "../test/support/pg-cluster.ts"
import { factsFor, LEASE_MS, nowUs, type Workload, workload } from "./fixtures.ts"
import { type BenchSection, type Check, mark } from "./section.ts"
import { type OpName, SQL } from "./sql.ts"
import { breakdownTable, measureBreakdown } from "./postgres-breakdown.ts"
import { layerPhases, OPS } from "./store.ts"
import { combineRounds, ratio, type Summary, summarize, table, us } from "./stats.ts"

type RoundResult = Record<OpName, Summary>

const GROWTH_LIMIT = 1.5
const GOAL_RATIO = 1.5

const iso = (millis: number) => new Date(millis).toISOString()

/**
 * The floor on PostgreSQL: the store's statements in PostgreSQL's dialect on one plain client,
 * sent as the layer sends them: named prepared statements.
 */
class RawPg {
  constructor(readonly client: pg.Client) {}

  private async rows(op: keyof typeof SQL, values: ReadonlyArray<unknown>): Promise<number> {
    return (
      (await this.client.query({ name: op, text: toPgDialect(SQL[op]), values: [...values] })).rowCount ?? 0
    )
  }

  ensure = (w: Workload) => {
    const at = iso(Date.now())
    const r = w.raw
    return this.rows("ensure", [
      r.intentId,
      r.sourceEventId,
      r.runId,
      r.workflowRef,
      r.targetSessionId,
      r.cause,
      r.nodeId,
      r.attemptId,
      r.factsJson,
      at,
      null
    ])
  }
  get = (intentId: string) => this.rows("get", [intentId])
  list = (session: string, runId: string) => this.rows("list", [session, runId])
  claimForRun = (runId: string, session: string, token: string) => {
    const now = Date.now()
    return this.rows("claimForRun", [token, now + LEASE_MS, runId, session, now, token])
  }
  release = (intentId: string, token: string) => this.rows("release", [intentId, token])
  makeEligible = (intentId: string) => this.rows("makeEligible", [iso(Date.now()), null, intentId])
  /** As the layer does it: the read-only probe, then the claim only when it found something. */
  claimEligibleForSession = async (session: string, token: string) => {
    const now = Date.now()
    if ((await this.rows("probeEligible", [session, now, token])) === 0) return 0
    return this.rows("claimEligibleForSession", [token, now + LEASE_MS, session, now, token])
  }
  resolve = (intentId: string, token: string) => {
    const now = Date.now()
    return this.rows("resolve", [iso(now), "fallback", `message-${intentId}`, intentId, token, now])
  }
}

const connect = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** A URL whose connections see only schema `name` of the bench database. */
const schemaUrl = (base: string, name: string) => {
  const url = new URL(base)
  url.searchParams.set("options", `-c search_path=${name}`)
  return url.toString()
}

const withPgStore = <A>(url: string, use: (store: TurnIntentStoreService) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(layerTurnIntentStorePg({ url })), (context) =>
        use(Context.get(context, TurnIntentStore))
      )
    )
  )

const expectOne = (op: OpName, count: number) => {
  if (count !== 1) throw new Error(`bench postgres ${op}: expected 1 row, got ${count}`)
}

interface Plan {
  readonly ops: number
  readonly warmup: number
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

// ---- scaling -------------------------------------------------------------------------------

const TARGETS = 100
const OTHER_PENDING = 1_000
type ScaleOp = "syncPass" | "claimEligibleForSession" | "claimForRun"
const SCALE_OPS: ReadonlyArray<ScaleOp> = ["syncPass", "claimEligibleForSession", "claimForRun"]
const EXPECTED: Record<ScaleOp, number> = { syncPass: 0, claimEligibleForSession: 1, claimForRun: 1 }
const scaleToken = (k: number) => `scaling-token-${k}`
const idFor = (tag: string) => `deferred-turn:${createHash("sha256").update(tag).digest("hex")}`

/** As bench/scaling.ts: history over the very sessions and runs being claimed, plus other pending. */
const populate = async (client: pg.Client, history: number) => {
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

const scaleLayerCall = (store: TurnIntentStoreService, op: ScaleOp, k: number) => {
  switch (op) {
    case "syncPass":
    case "claimEligibleForSession":
      return Effect.map(
        store.claimEligibleForSession({
          targetSessionId: `${op === "syncPass" ? "idle" : "eligible"}-session-${k}`,
          token: scaleToken(k),
          leaseMs: LEASE_MS,
          limit: 10
        }),
        (rows) => rows.length
      )
    case "claimForRun":
      return Effect.map(
        store.claimForRun({
          runId: `claim-run-${k}`,
          targetSessionId: `claim-session-${k}`,
          token: scaleToken(k),
          leaseMs: LEASE_MS
        }),
        (claimed) => (claimed._tag === "Some" ? 1 : 0)
      )
  }
}

const scaleRawCall = (raw: RawPg, op: ScaleOp, k: number) =>
  op === "claimForRun"
    ? raw.claimForRun(`claim-run-${k}`, `claim-session-${k}`, scaleToken(k))
    : raw.claimEligibleForSession(`${op === "syncPass" ? "idle" : "eligible"}-session-${k}`, scaleToken(k))

type Side = "raw" | "layer"

/** Re-claims by the same claimant are idempotent, so one target set serves every call. */
const measureScale = async (url: string, plan: Plan, rounds: number) => {
  const raw = new RawPg(await connect(url))
  const samples: Record<ScaleOp, Record<Side, Array<Summary>>> = {
    syncPass: { raw: [], layer: [] },
    claimEligibleForSession: { raw: [], layer: [] },
    claimForRun: { raw: [], layer: [] }
  }
  const check = (op: ScaleOp, count: number) => {
    if (count !== EXPECTED[op]) throw new Error(`scaling ${op}: expected ${EXPECTED[op]} rows, got ${count}`)
  }
  try {
    await withPgStore(url, (store) =>
      Effect.gen(function* () {
        const time = (side: Side, op: ScaleOp) =>
          Effect.gen(function* () {
            const call = (k: number) =>
              side === "raw" ? Effect.promise(() => scaleRawCall(raw, op, k)) : scaleLayerCall(store, op, k)
            for (let i = 0; i < plan.warmup; i++) check(op, yield* call(i % TARGETS))
            const out = new Float64Array(plan.ops)
            for (let i = 0; i < plan.ops; i++) {
              const start = nowUs()
              const count = yield* call(i % TARGETS)
              out[i] = nowUs() - start
              check(op, count)
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
