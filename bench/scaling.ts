/**
 * Claim cost vs. resolved history: the claims with 10² … 10⁵ resolved intents (spread over the
 * very sessions and runs being claimed) plus 10³ pending intents of other sessions, raw floor vs.
 * layer, on SQLite and on PostgreSQL (a throwaway cluster, test/support/pg-cluster.ts: unix socket,
 * fsync off; skipped with one line without initdb), and the SQLite query plans of the claims.
 * Re-claims by the same claimant are idempotent, so a fixed target set serves every round.
 */
import { join } from "node:path"
import type Sqlite from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { layerTurnIntentStorePg } from "../src/store/pg/database-pg.ts"
import { TurnIntentStore, type TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { type Cluster, databaseUrl, startCluster, stopCluster } from "../test/support/pg-cluster.ts"
import {
  type BenchSection,
  type Check,
  checkList,
  mark,
  combineRounds,
  ratio,
  type Summary,
  summarize,
  table,
  us
} from "./section.ts"
import {
  historyInsert,
  historyRows,
  LEASE_MS,
  nowUs,
  OTHER_PENDING,
  openLayerStore,
  openRaw,
  RawPg,
  RawStore,
  SQL,
  TARGETS,
  target,
  token
} from "./sql.ts"

/** The most a claim may slow down from the smallest history to the largest. */
const GROWTH_LIMIT = 1.5

type ScaleOp = "syncPass" | "claimEligibleForSession" | "claimForRun"
const SCALE_OPS: ReadonlyArray<ScaleOp> = ["syncPass", "claimEligibleForSession", "claimForRun"]
const LABEL: Record<ScaleOp, string> = {
  syncPass: "sync pass, nothing eligible (`claimEligibleForSession` → [])",
  claimEligibleForSession: "`claimEligibleForSession` (1 eligible)",
  claimForRun: "`claimForRun` (1 pending)"
}
/** Rows each call must touch, so a broken setup cannot time no-ops. */
const EXPECTED: Record<ScaleOp, number> = { syncPass: 0, claimEligibleForSession: 1, claimForRun: 1 }

const layerCall = (store: TurnIntentStoreService, op: ScaleOp, k: number) =>
  op === "claimForRun"
    ? Effect.map(
        store.claimForRun({
          runId: target.claim(k).run,
          targetSessionId: target.claim(k).session,
          token: token(k),
          leaseMs: LEASE_MS
        }),
        (claimed) => (claimed._tag === "Some" ? 1 : 0)
      )
    : Effect.map(
        store.claimEligibleForSession({
          targetSessionId: (op === "syncPass" ? target.idle : target.eligible)(k).session,
          token: token(k),
          leaseMs: LEASE_MS,
          limit: 10
        }),
        (rows) => rows.length
      )

const sqliteCall = (store: RawStore, op: ScaleOp, k: number): number =>
  op === "claimForRun"
    ? store.claimForRun(target.claim(k).run, target.claim(k).session, token(k), LEASE_MS).length
    : store.claimEligibleForSession(
        (op === "syncPass" ? target.idle : target.eligible)(k).session,
        token(k),
        LEASE_MS
      ).length

const pgCall = (raw: RawPg, op: ScaleOp, k: number) =>
  op === "claimForRun"
    ? raw.claimForRun(target.claim(k).run, target.claim(k).session, token(k))
    : raw.claimEligibleForSession((op === "syncPass" ? target.idle : target.eligible)(k).session, token(k))

type Side = "raw" | "layer"
type Measured = Record<ScaleOp, Record<Side, Summary>>
interface Plan {
  readonly ops: number
  readonly warmup: number
}

/** Both sides inside one fiber, the side going first alternating by round; median of rounds. */
const measure = (
  layer: TurnIntentStoreService,
  raw: (op: ScaleOp, k: number) => Effect.Effect<number>,
  plan: Plan
) =>
  Effect.gen(function* () {
    const rounds: Record<ScaleOp, Record<Side, Array<Summary>>> = {
      syncPass: { raw: [], layer: [] },
      claimEligibleForSession: { raw: [], layer: [] },
      claimForRun: { raw: [], layer: [] }
    }
    const time = (side: Side, op: ScaleOp) =>
      Effect.gen(function* () {
        const call = (k: number) => (side === "raw" ? raw(op, k) : layerCall(layer, op, k))
        const check = (count: number) => {
          if (count !== EXPECTED[op])
            throw new Error(`scaling ${op}: expected ${EXPECTED[op]} rows, got ${count}`)
        }
        for (let i = 0; i < plan.warmup; i++) check(yield* call(i % TARGETS))
        const out = new Float64Array(plan.ops)
        for (let i = 0; i < plan.ops; i++) {
          const start = nowUs()
          const count = yield* call(i % TARGETS)
          out[i] = nowUs() - start
          check(count)
        }
        rounds[op][side].push(summarize(out))
      })
    for (let round = 0; round < 3; round++) {
      for (const op of SCALE_OPS) {
        yield* time(round % 2 === 0 ? "raw" : "layer", op)
        yield* time(round % 2 === 0 ? "layer" : "raw", op)
      }
    }
    const combined: Partial<Measured> = {}
    for (const op of SCALE_OPS)
      combined[op] = { raw: combineRounds(rounds[op].raw), layer: combineRounds(rounds[op].layer) }
    return combined as Measured
  })

/** Query plan as an indented tree of `detail` lines. */
const queryPlan = (
  db: Sqlite.Database,
  sql: string,
  params: ReadonlyArray<unknown>
): ReadonlyArray<string> => {
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as ReadonlyArray<{
    id: number
    parent: number
    detail: string
  }>
  const depth = new Map<number, number>([[0, -1]])
  return rows.map((row) => {
    const d = (depth.get(row.parent) ?? -1) + 1
    depth.set(row.id, d)
    return `${"  ".repeat(d)}${row.detail}`
  })
}

const planCheck = (name: string, plan: ReadonlyArray<string>, index: string): Check => {
  const text = plan.map((line) => line.trim())
  const usesIndex = text.some((line) => line.includes(`INDEX ${index}`))
  const fullScan = text.find((line) => /^SCAN workflow_turn_intents(?! USING)/.test(line))
  const tempSort = text.find((line) => line.startsWith("USE TEMP B-TREE"))
  const ok = usesIndex && fullScan === undefined && tempSort === undefined
  return {
    name: `query plan: ${name} uses ${index}`,
    ok,
    detail: ok
      ? "partial index, no table scan, no sort"
      : `uses index: ${usesIndex}; scan: ${fullScan ?? "none"}; sort: ${tempSort ?? "none"}`
  }
}

/** The claims' plans on a populated database, each checked for its partial index. */
const plansOf = (db: Sqlite.Database) => {
  const now = Date.now()
  const pending = "workflow_turn_intents_pending_by_run"
  const eligible = "workflow_turn_intents_eligible_by_session"
  const plans: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
    [
      "claimForRun",
      queryPlan(db, SQL.claimForRun, ["t", now + 1, "claim-run-0", "claim-session-0", now, "t"]),
      pending
    ],
    [
      "claimEligibleForSession",
      queryPlan(db, SQL.claimEligibleForSession, ["t", now + 1, "idle-session-0", now, "t"]),
      eligible
    ],
    ["list pending for run + session", queryPlan(db, SQL.list, ["claim-session-0", "claim-run-0"]), pending],
    ["sync-pass probe", queryPlan(db, SQL.probeEligible, ["idle-session-0", now, "t"]), eligible]
  ]
  return {
    markdown: plans.flatMap(([name, plan]) => [`${name}:`, "", "```", ...plan, "```", ""]),
    checks: plans.map(([name, plan, index]) => planCheck(name, plan, index))
  }
}

type Backend = "SQLite" | "PostgreSQL"
type Scaled = Array<{ readonly backend: Backend; readonly size: number; readonly measured: Measured }>

const sqliteScaling = async (tempRoot: string, sizes: ReadonlyArray<number>, plan: Plan, scaled: Scaled) => {
  let plans: ReturnType<typeof plansOf> = { markdown: [], checks: [] }
  for (const size of sizes) {
    const filename = join(tempRoot, `scaling-${size}.db`)
    const raw = new RawStore(openRaw(filename))
    try {
      const insert = raw.db.prepare(historyInsert(() => "?"))
      raw.db
        .transaction(() => {
          for (const row of historyRows(size)) insert.run(...row)
        })
        .immediate()
      raw.db.pragma("wal_checkpoint(TRUNCATE)")
      if (size === sizes.at(-1)) plans = plansOf(raw.db)
      const measured = await Effect.runPromise(
        Effect.scoped(
          Effect.flatMap(openLayerStore(filename), (layer) =>
            measure(layer, (op, k) => Effect.sync(() => sqliteCall(raw, op, k)), plan)
          )
        )
      )
      scaled.push({ backend: "SQLite", size, measured })
    } finally {
      raw.close()
    }
  }
  return plans
}

const connect = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return client
}

/** One schema per size in a database of a throwaway cluster; the history in 1,000-row INSERTs. */
const pgScaling = async (cluster: Cluster, sizes: ReadonlyArray<number>, plan: Plan, scaled: Scaled) => {
  try {
    const admin = await connect(cluster.adminUrl)
    await admin.query("CREATE DATABASE bench")
    const version = String((await admin.query("SHOW server_version")).rows[0]?.server_version ?? "?")
    await admin.end()
    for (const size of sizes) {
      const url = new URL(databaseUrl(cluster.adminUrl, "bench"))
      url.searchParams.set("options", `-c search_path=scaling_${size}`)
      const client = await connect(url.toString())
      await client.query(`CREATE SCHEMA scaling_${size}`)
      const store = Layer.build(layerTurnIntentStorePg({ url: url.toString() }))
      const withStore = <A>(use: (layer: TurnIntentStoreService) => Effect.Effect<A, unknown>) =>
        Effect.runPromise(
          Effect.scoped(Effect.flatMap(store, (context) => use(Context.get(context, TurnIntentStore))))
        )
      try {
        await withStore(() => Effect.void) // the layer's migration creates the tables
        const rows = [...historyRows(size)]
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
        const raw = new RawPg(client)
        const measured = await withStore((layer) =>
          measure(layer, (op, k) => Effect.promise(() => pgCall(raw, op, k)), plan)
        )
        scaled.push({ backend: "PostgreSQL", size, measured })
      } finally {
        await client.end()
      }
    }
    return version
  } finally {
    stopCluster(cluster)
  }
}

const power = (n: number) => {
  const exponent = Math.round(Math.log10(n))
  return 10 ** exponent === n
    ? `10${String(exponent).replace(/\d/g, (d) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[Number(d)] ?? d)}`
    : String(n)
}

export const scalingSection: BenchSection = {
  id: "scaling",
  title: "Claim cost with resolved history: SQLite and PostgreSQL",
  run: async (context) => {
    const plan: Plan = context.quick ? { ops: 300, warmup: 50 } : { ops: 2_000, warmup: 300 }
    const pgPlan: Plan = context.quick ? { ops: 100, warmup: 20 } : { ops: 500, warmup: 100 }
    const scaled: Scaled = []
    const plans = await sqliteScaling(
      context.tempRoot,
      context.quick ? [100, 10_000] : [100, 10_000, 100_000],
      plan,
      scaled
    )
    context.log("  scaling: SQLite measured")
    let cluster: Cluster | string
    try {
      cluster = startCluster()
    } catch (error) {
      cluster = error instanceof Error ? error.message : String(error)
    }
    const pgNote =
      typeof cluster === "string"
        ? `PostgreSQL skipped: no server binaries here (${cluster}).`
        : `PostgreSQL ${await pgScaling(cluster, context.quick ? [100, 10_000] : [100, 100_000], pgPlan, scaled)} ` +
          "on a throwaway cluster (unix socket, `fsync=off`, `synchronous_commit=off`: the cluster the tests use), " +
          `${pgPlan.ops} timed calls per cell after ${pgPlan.warmup}.`
    context.log("  scaling: PostgreSQL done")
    const goals: Array<Check> = []
    const growthRows: Array<ReadonlyArray<string>> = []
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      const cells = scaled.filter((s) => s.backend === backend)
      const first = cells[0]
      const last = cells.at(-1)
      if (first === undefined || last === undefined || first === last) continue
      for (const op of SCALE_OPS) {
        const layer = last.measured[op].layer.median / first.measured[op].layer.median
        const raw = last.measured[op].raw.median / first.measured[op].raw.median
        const ok = layer <= GROWTH_LIMIT
        const span = `${power(first.size)} to ${power(last.size)} resolved`
        goals.push({
          name: `${backend} ${op}: cost flat from ${span}`,
          ok,
          detail: `layer ${ratio(layer)}, raw ${ratio(raw)} (limit ${GROWTH_LIMIT}×)`
        })
        growthRows.push([backend, LABEL[op], span, ratio(raw), ratio(layer), mark(ok)])
      }
    }
    const pair = (s: Summary) => `${us(s.median)} / ${us(s.p99)}`
    const rows = scaled.flatMap(({ backend, size, measured }) =>
      SCALE_OPS.map((op) => [
        backend,
        LABEL[op],
        power(size),
        pair(measured[op].raw),
        pair(measured[op].layer),
        ratio(measured[op].layer.median / measured[op].raw.median)
      ])
    )
    const markdown = [
      `Resolved intents in history (spread over the sessions and runs being claimed) plus ${OTHER_PENDING.toLocaleString("en")} ` +
        `pending eligible intents of 100 other sessions and ${2 * TARGETS} pending targets; calls rotate over ${TARGETS} ` +
        "targets, median of 3 rounds, µs (median / p99). Claims are re-claims by the same claimant, which the store " +
        `allows and which leave the state unchanged. SQLite: ${plan.ops.toLocaleString("en")} timed calls per cell after ` +
        `${plan.warmup}, the raw floor on better-sqlite3. ${pgNote} The PostgreSQL floor is one plain \`pg\` client ` +
        "sending the same statements in PostgreSQL's dialect (the claims with `FOR UPDATE SKIP LOCKED`) as named " +
        "prepared statements. Both floors probe read-only before the claim `UPDATE`, as the layer does (an `UPDATE` " +
        "that matches nothing still takes the write lock).",
      "",
      table(["backend", "op", "resolved history", "raw floor", "our layer", "ratio med"], rows),
      "",
      "Growth of the median from the smallest history to the largest:",
      "",
      table(["backend", "op", "history", "raw", "layer", `layer flat (≤ ${GROWTH_LIMIT}×)`], growthRows),
      "",
      `SQLite query plans (on the ${power(scaled.filter((s) => s.backend === "SQLite").at(-1)?.size ?? 0)} database):`,
      "",
      ...plans.markdown,
      checkList(plans.checks)
    ].join("\n")
    return { markdown, checks: plans.checks, goals }
  }
}
