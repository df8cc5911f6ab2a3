/**
 * Store operations through our Effect layer vs. the raw floor (the same SQL on better-sqlite3,
 * prepared once). Each round opens a fresh database per side and walks every intent through
 * ensure → get → list → claimForRun → release → makeEligible → claimEligibleForSession → resolve;
 * a warm-up slice of each phase runs untimed before the measured slice.
 */
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime, type Scope } from "effect"
import type { TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { LEASE_MS, nowUs, openLayerStore, type Workload, workload } from "./fixtures.ts"
import { ANCHORS, PREVIOUS } from "./anchors.ts"
import { type BenchContext, type BenchSection, type Check, mark } from "./section.ts"
import { sqlParity } from "./sql-parity.ts"
import { type OpName, openRaw, RawStore, type Synchronous } from "./sql.ts"
import { combineRounds, ratio, type Summary, summarize, table, us } from "./stats.ts"

export const OPS: ReadonlyArray<OpName> = [
  "ensure",
  "get",
  "list",
  "claimForRun",
  "release",
  "makeEligible",
  "claimEligibleForSession",
  "resolve"
]

/** Issue 25: each store op within 3× the raw floor (the 1.5× of the retired fast path is gone). */
export const GOAL_RATIO = 3

type RoundResult = Record<OpName, Summary>

interface Plan {
  readonly ops: number
  readonly warmup: number
}

/** Every timed call must touch exactly one row; a bench that measures no-ops is worthless. */
const expectOne = (op: OpName, index: number, count: number) => {
  if (count !== 1) throw new Error(`bench ${op} #${index}: expected 1 row, got ${count}`)
}

const rawRound = (filename: string, synchronous: Synchronous, plan: Plan, items: ReadonlyArray<Workload>) => {
  const store = new RawStore(openRaw(filename, synchronous))
  const result: Partial<RoundResult> = {}
  const phase = (op: OpName, call: (item: Workload) => number) => {
    for (let i = 0; i < plan.warmup; i++) expectOne(op, i, call(items[i] as Workload))
    const samples = new Float64Array(plan.ops)
    for (let i = 0; i < plan.ops; i++) {
      const item = items[plan.warmup + i] as Workload
      const start = nowUs()
      const count = call(item)
      samples[i] = nowUs() - start
      expectOne(op, i, count)
    }
    result[op] = summarize(samples)
  }
  try {
    phase("ensure", (w) => store.ensure(w.raw).length)
    phase("get", (w) => (store.get(w.raw.intentId) === undefined ? 0 : 1))
    phase("list", (w) => store.list(w.raw.targetSessionId, w.raw.runId).length)
    phase(
      "claimForRun",
      (w) => store.claimForRun(w.raw.runId, w.raw.targetSessionId, `token-${w.raw.runId}`, LEASE_MS).length
    )
    phase("release", (w) => (store.release(w.raw.intentId, `token-${w.raw.runId}`) ? 1 : 0))
    phase("makeEligible", (w) => store.makeEligible(w.raw.intentId).length)
    phase(
      "claimEligibleForSession",
      (w) => store.claimEligibleForSession(w.raw.targetSessionId, `token-${w.raw.runId}`, LEASE_MS).length
    )
    phase(
      "resolve",
      (w) =>
        store.resolve(w.raw.intentId, `token-${w.raw.runId}`, "fallback", `message-${w.raw.runId}`).length
    )
  } finally {
    store.close()
  }
  return result as RoundResult
}

/** Time each call inside one fiber: the extension runs a whole workflow step per runtime call. */
export const layerPhases = (
  store: TurnIntentStoreService,
  plan: Plan,
  items: ReadonlyArray<Workload>,
  result: Partial<RoundResult>
) => {
  const phase = <E>(op: OpName, call: (item: Workload) => Effect.Effect<number, E>) =>
    Effect.gen(function* () {
      for (let i = 0; i < plan.warmup; i++) expectOne(op, i, yield* call(items[i] as Workload))
      const samples = new Float64Array(plan.ops)
      for (let i = 0; i < plan.ops; i++) {
        const item = items[plan.warmup + i] as Workload
        const start = nowUs()
        const count = yield* call(item)
        samples[i] = nowUs() - start
        expectOne(op, i, count)
      }
      result[op] = summarize(samples)
    })
  const token = (w: Workload) => `token-${w.input.runId}`
  return Effect.gen(function* () {
    yield* phase("ensure", (w) => Effect.as(store.ensure(w.input), 1))
    yield* phase("get", (w) =>
      Effect.map(store.get(w.raw.intentId), (found) => (found._tag === "Some" ? 1 : 0))
    )
    yield* phase("list", (w) =>
      Effect.map(
        store.list({
          targetSessionId: w.input.targetSessionId,
          runId: w.input.runId,
          state: "pending",
          limit: 10
        }),
        (rows) => rows.length
      )
    )
    yield* phase("claimForRun", (w) =>
      Effect.map(
        store.claimForRun({
          runId: w.input.runId,
          targetSessionId: w.input.targetSessionId,
          token: token(w),
          leaseMs: LEASE_MS
        }),
        (claimed) => (claimed._tag === "Some" ? 1 : 0)
      )
    )
    yield* phase("release", (w) =>
      Effect.map(store.release({ intentId: w.raw.intentId, token: token(w) }), (released) =>
        released ? 1 : 0
      )
    )
    yield* phase("makeEligible", (w) => Effect.as(store.makeEligible({ intentId: w.raw.intentId }), 1))
    yield* phase("claimEligibleForSession", (w) =>
      Effect.map(
        store.claimEligibleForSession({
          targetSessionId: w.input.targetSessionId,
          token: token(w),
          leaseMs: LEASE_MS,
          limit: 10
        }),
        (claimed) => claimed.length
      )
    )
    yield* phase("resolve", (w) =>
      Effect.as(
        store.resolve({
          intentId: w.raw.intentId,
          token: token(w),
          resolution: "fallback",
          messageId: `message-${w.input.runId}`
        }),
        1
      )
    )
  })
}

type Opener = (
  filename: string,
  synchronous: Synchronous
) => Effect.Effect<TurnIntentStoreService, unknown, Scope.Scope>

const layerRound = (
  open: Opener,
  filename: string,
  synchronous: Synchronous,
  plan: Plan,
  items: ReadonlyArray<Workload>
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const store = yield* open(filename, synchronous)
        const result: Partial<RoundResult> = {}
        yield* layerPhases(store, plan, items, result)
        return result as RoundResult
      })
    )
  )

export interface SideResults {
  readonly raw: RoundResult
  readonly layer: RoundResult
}

/** Median of `rounds` rounds per side; the side that goes first alternates from round to round. */
export const measureSides = async (
  context: BenchContext,
  label: string,
  synchronous: Synchronous,
  plan: Plan,
  rounds: number
): Promise<SideResults> => {
  const items = Array.from({ length: plan.warmup + plan.ops }, (_, i) => workload("bench", i))
  const results: Record<keyof SideResults, Array<RoundResult>> = { raw: [], layer: [] }
  const file = (side: string, round: number) => join(context.tempRoot, `${label}-${side}-${round}.db`)
  const sides: ReadonlyArray<readonly [keyof SideResults, (round: number) => Promise<RoundResult>]> = [
    ["raw", async (round) => rawRound(file("raw", round), synchronous, plan, items)],
    ["layer", (round) => layerRound(openLayerStore, file("layer", round), synchronous, plan, items)]
  ]
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < sides.length; i++) {
      const [side, run] = sides[(i + round) % sides.length] as (typeof sides)[number]
      results[side].push(await run(round))
    }
    context.log(`  ${label}: round ${round + 1}/${rounds} done`)
  }
  const combine = (rs: ReadonlyArray<RoundResult>) =>
    Object.fromEntries(OPS.map((op) => [op, combineRounds(rs.map((r) => r[op]))])) as RoundResult
  return { raw: combine(results.raw), layer: combine(results.layer) }
}

/** What entering the runtime costs per call (not part of the per-op numbers above). */
const runtimeEntry = async (samples: number): Promise<Summary> => {
  const runtime = ManagedRuntime.make(Layer.empty)
  const out = new Float64Array(samples)
  for (let i = 0; i < 500; i++) await runtime.runPromise(Effect.void)
  for (let i = 0; i < samples; i++) {
    const start = nowUs()
    await runtime.runPromise(Effect.void)
    out[i] = nowUs() - start
  }
  await runtime.dispose()
  return summarize(out)
}

const measureFull = (context: BenchContext, plan: Plan) => {
  context.log("store ops, synchronous=FULL")
  return measureSides(context, "full", "FULL", plan, 3)
}

const verdict = (goals: ReadonlyArray<Check>): string => {
  const missed = goals.filter((g) => !g.ok)
  return (
    `**Goal ≤ ${GOAL_RATIO}× the floor:** the layer meets it for ${goals.length - missed.length} of ${goals.length} ops` +
    (missed.length === 0 ? "." : ` (missed: ${missed.map((g) => g.name.split(" ")[0]).join(", ")}).`) +
    " The breakdown section below shows where the remaining time goes."
  )
}

const pair = (s: Summary) => `${us(s.median)} / ${us(s.p99)}`

export const storeSection: BenchSection = {
  id: "store",
  title: "Store operations: Effect layer vs. raw better-sqlite3 floor",
  run: async (context) => {
    const normalPlan: Plan = context.quick ? { ops: 500, warmup: 100 } : { ops: 5_000, warmup: 500 }
    const fullPlan: Plan = context.quick ? { ops: 100, warmup: 20 } : { ops: 500, warmup: 100 }
    const parity = await sqlParity(context)
    context.log("store ops, synchronous=NORMAL")
    const normal = await measureSides(context, "normal", "NORMAL", normalPlan, 3)
    // FULL is opt-in: one fsync per commit makes it slow and mostly a measure of the disk.
    const full = context.options.has("full") ? await measureFull(context, fullPlan) : undefined
    const entry = await runtimeEntry(context.quick ? 1_000 : 5_000)

    const goals: Array<Check> = []
    const rows = OPS.map((op) => {
      const raw = normal.raw[op]
      const layer = normal.layer[op]
      const r = layer.median / raw.median
      const ok = r <= GOAL_RATIO
      goals.push({
        name: `${op} ≤ ${GOAL_RATIO}× raw`,
        ok,
        detail: `${ratio(r)} (${us(layer.median)} vs ${us(raw.median)} µs)`
      })
      const anchor = ANCHORS[op]
      return [
        `\`${op}\``,
        pair(raw),
        pair(layer),
        `${ratio(r)} (${ratio(layer.p99 / raw.p99)})`,
        mark(ok),
        PREVIOUS[op],
        ...(full === undefined ? [] : [`${us(full.raw[op].median)} / ${us(full.layer[op].median)}`]),
        anchor.reference,
        `${anchor.floorFull} · ${anchor.floorNormal}`
      ]
    })
    const markdown = [
      `Per-op latency in µs (median / p99): ${normalPlan.ops.toLocaleString("en")} timed ops per op after ` +
        `${normalPlan.warmup} untimed, median of 3 rounds (sides alternate first), a fresh WAL file database per ` +
        `side and round, \`synchronous=NORMAL\`, \`busy_timeout=5000\`, \`foreign_keys=ON\` on both sides. ` +
        `Each intent has its own run and session; the table holds ${(normalPlan.ops + normalPlan.warmup).toLocaleString("en")} rows. ` +
        "The layer is `layerSqlite` from src/store, each call timed inside one fiber; the raw floor runs the same " +
        "SQL (for `claimEligibleForSession`: the read-only probe, then the claim) on statements prepared once. " +
        "The layer runs every statement through @effect/sql-sqlite-node's SqlClient and decodes every row with its " +
        "strict Schema; the floor decodes nothing (the breakdown section times the pieces). " +
        (full === undefined
          ? "(`--full` adds the walk with `synchronous=FULL` as a column.)"
          : `FULL: the same walk with \`synchronous=FULL\`, ${fullPlan.ops.toLocaleString("en")} ops.`),
      "",
      table(
        [
          "op",
          "raw floor",
          "our layer",
          "ratio med (p99)",
          `≤ ${GOAL_RATIO}×`,
          "before: layer at 022c026 (ratio)",
          ...(full === undefined ? [] : ["FULL med: raw / layer"]),
          "anchor: reference impl (FULL)",
          "anchor: raw floor FULL · NORMAL med"
        ],
        rows
      ),
      "",
      verdict(goals),
      "",
      "The “before” column is the previous layer (every query through @effect/sql, Schema row decoding, " +
        "`Effect.gen` checks) from its own run on this machine on 2026-11-30; its ratio is to that run's floor. " +
        `Anchor columns are the reference numbers from perf-anchors.md (a reference implementation of the same ` +
        `store measured on this machine kind: ${OPS.filter((op) => ANCHORS[op].reference !== "—")
          .map((op) => `\`${op}\` ≙ “${ANCHORS[op].label}”`)
          .join(", ")}); ` +
        "neither was produced by this run.",
      "",
      `Entering the runtime (\`ManagedRuntime.runPromise(Effect.void)\`) costs ${pair(entry)} µs per call on top, ` +
        `once per workflow step rather than once per store op.`,
      "",
      parity.map((c) => `- ${mark(c.ok)} ${c.name}: ${c.detail}`).join("\n")
    ].join("\n")
    return { markdown, checks: parity, goals }
  }
}
