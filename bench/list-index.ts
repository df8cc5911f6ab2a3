/**
 * Does `list` need an index? Listing pending intents of a run for a session uses the partial
 * index (and is the only shape src calls). Listing all or resolved intents by session or by run
 * has no index: SQLite scans the table and sorts, so its cost grows with resolved history. An
 * index on (session, requested_at, intent_id) and one on (run, requested_at, intent_id) would
 * make those shapes cheap, but every `ensure` would then write two more index entries. This
 * section measures both sides on the raw floor (the layer adds a constant to each).
 */
import { createHash } from "node:crypto"
import { join } from "node:path"
import type Sqlite from "better-sqlite3"
import { factsFor, nowUs, workload } from "./fixtures.ts"
import type { BenchSection } from "./section.ts"
import { openRaw, RawStore } from "./sql.ts"
import { combineRounds, ratio, type Summary, summarize, table, us } from "./stats.ts"
import { queryPlan } from "./scaling.ts"
import { timeSync } from "./timing.ts"

const SESSIONS = 100
const INTENTS_PER_RUN = 10

/** The candidate indexes (not in src/store/schema.ts; this section decides whether they should be). */
const CANDIDATES = [
  `CREATE INDEX bench_list_by_session ON workflow_turn_intents (target_session_id, requested_at, intent_id)`,
  `CREATE INDEX bench_list_by_run ON workflow_turn_intents (run_id, requested_at, intent_id)`
]

const LIST = {
  session: `SELECT * FROM workflow_turn_intents WHERE (target_session_id = ?)
    ORDER BY requested_at, intent_id LIMIT ?`,
  run: `SELECT * FROM workflow_turn_intents WHERE (run_id = ?) ORDER BY requested_at, intent_id LIMIT ?`
} as const

const idFor = (tag: string) => `deferred-turn:${createHash("sha256").update(tag).digest("hex")}`

/** `count` resolved intents, 10 per run, runs spread round-robin over 100 sessions. */
const populate = (db: Sqlite.Database, count: number) => {
  const insert =
    db.prepare(`INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
    target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at, resolved_at,
    resolution, resolution_message_id) VALUES (?, ?, ?, 'review-and-fix@1', ?, 'agentCancelled', 'node-1',
    'node-1-attempt-1', ?, ?, ?, ?, 'fallback', ?)`)
  const at = (offsetMs: number) => new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString()
  db.transaction(() => {
    for (let h = 0; h < count; h++) {
      const run = Math.floor(h / INTENTS_PER_RUN)
      insert.run(
        idFor(`list-${h}`),
        `source-${h}`,
        `list-run-${run}`,
        `list-session-${run % SESSIONS}`,
        JSON.stringify(factsFor(`list-run-${run}`, "node-1")),
        at(h),
        at(h + 1),
        at(h + 2),
        `message-${h}`
      )
    }
  }).immediate()
  db.pragma("wal_checkpoint(TRUNCATE)")
}

interface ListCell {
  readonly size: number
  readonly session: Summary
  readonly run: Summary
  readonly sessionIndexed: Summary
  readonly runIndexed: Summary
  readonly plan: ReadonlyArray<string>
  readonly planIndexed: ReadonlyArray<string>
}

const timeLists = (db: Sqlite.Database, ops: number, warmup: number) => {
  const bySession = db.prepare(LIST.session)
  const byRun = db.prepare(LIST.run)
  const rows = Number(db.prepare("SELECT count(*) FROM workflow_turn_intents").pluck().get())
  const runs = Math.max(1, Math.floor(rows / INTENTS_PER_RUN))
  const loop = { ops, warmup, rounds: 3 }
  return {
    session: timeSync(loop, (i) => bySession.all(`list-session-${i % SESSIONS}`, 10)),
    run: timeSync(loop, (i) => byRun.all(`list-run-${(i * 7919) % runs}`, 10))
  }
}

const measureList = (filename: string, size: number, quick: boolean): ListCell => {
  const db = openRaw(filename)
  try {
    populate(db, size)
    // Bounded by time, not count: a scan of 10⁵ rows takes milliseconds.
    const ops = Math.max(20, Math.min(2_000, Math.floor((quick ? 200_000 : 2_000_000) / size)))
    const warmup = Math.max(5, Math.floor(ops / 10))
    const plain = timeLists(db, ops, warmup)
    const plan = queryPlan(db, LIST.session, ["list-session-1", 10])
    for (const statement of CANDIDATES) db.exec(statement)
    const indexed = timeLists(db, 2_000, 200)
    const planIndexed = queryPlan(db, LIST.session, ["list-session-1", 10])
    return {
      size,
      session: plain.session,
      run: plain.run,
      sessionIndexed: indexed.session,
      runIndexed: indexed.run,
      plan,
      planIndexed
    }
  } finally {
    db.close()
  }
}

/** `ensure` (the raw insert) on a database holding `history` rows, with or without the candidates. */
const measureEnsure = (
  filename: string,
  history: number,
  withIndexes: boolean,
  ops: number,
  warmup: number
): Summary => {
  const store = new RawStore(openRaw(filename))
  try {
    if (history > 0) populate(store.db, history)
    if (withIndexes) for (const statement of CANDIDATES) store.db.exec(statement)
    const items = Array.from({ length: warmup + ops }, (_, i) => workload(`ensure-${withIndexes}`, i).raw)
    for (const item of items.slice(0, warmup)) store.ensure(item)
    const samples = new Float64Array(ops)
    for (const [i, item] of items.slice(warmup).entries()) {
      const start = nowUs()
      const inserted = store.ensure(item)
      samples[i] = nowUs() - start
      if (inserted.length !== 1) throw new Error("ensure bench: nothing inserted")
    }
    return summarize(samples)
  } finally {
    store.close()
  }
}

const power = (n: number) =>
  `10${String(Math.round(Math.log10(n))).replace(/\d/g, (d) => "⁰¹²³⁴⁵⁶⁷⁸⁹"[Number(d)] ?? d)}`
const pair = (s: Summary) => `${us(s.median)} / ${us(s.p99)}`

export const listIndexSection: BenchSection = {
  id: "list",
  title: "`list` by session or run over all intents: index or not",
  run: async (context) => {
    const sizes = context.quick ? [100, 10_000] : [100, 10_000, 100_000]
    const cells = sizes.map((size) => {
      const cell = measureList(join(context.tempRoot, `list-${size}.db`), size, context.quick)
      context.log(`  list ${size}: measured`)
      return cell
    })
    const ensureOps = context.quick ? 500 : 3_000
    const ensureWarmup = context.quick ? 100 : 300
    const histories = context.quick ? [0] : [0, 100_000]
    const ensureRows = histories.map((history) => {
      const rounds = { plain: [] as Array<Summary>, indexed: [] as Array<Summary> }
      for (let round = 0; round < 3; round++) {
        // Alternate which side goes first, so neither always gets the warmer disk cache.
        const order = round % 2 === 0 ? (["plain", "indexed"] as const) : (["indexed", "plain"] as const)
        for (const side of order) {
          const file = join(context.tempRoot, `ensure-${history}-${side}-${round}.db`)
          rounds[side].push(measureEnsure(file, history, side === "indexed", ensureOps, ensureWarmup))
        }
      }
      const plain = combineRounds(rounds.plain)
      const indexed = combineRounds(rounds.indexed)
      return { history, plain, indexed }
    })
    const last = cells[cells.length - 1]
    const rows = cells.map((c) => [
      power(c.size),
      pair(c.session),
      pair(c.sessionIndexed),
      pair(c.run),
      pair(c.runIndexed)
    ])
    const extra = ensureRows.map((r) => ({
      ...r,
      addedUs: r.indexed.median - r.plain.median,
      addedRatio: r.indexed.median / r.plain.median
    }))
    const markdown = [
      "Raw floor, µs (median / p99), `LIMIT 10`, median of 3 rounds. Resolved intents, 10 per run, runs spread over " +
        `${SESSIONS} sessions; “indexed” adds (target_session_id, requested_at, intent_id) and (run_id, requested_at, intent_id).`,
      "",
      table(["resolved history", "by session", "by session, indexed", "by run", "by run, indexed"], rows),
      "",
      `Query plan by session without the index (${last === undefined ? "?" : power(last.size)}):`,
      "",
      "```",
      ...(last?.plan ?? []),
      "```",
      "",
      "The price: `ensure` (the raw insert, the op every abort waits for), µs (median / p99), " +
        `${ensureOps.toLocaleString("en")} inserts after ${ensureWarmup} untimed, median of 3 rounds:`,
      "",
      table(
        ["rows already in the table", "without", "with the two indexes", "added"],
        extra.map((r) => [
          r.history === 0 ? "0 (fresh file)" : power(r.history),
          pair(r.plain),
          pair(r.indexed),
          `${us(r.addedUs)} µs (${ratio(r.addedRatio)})`
        ])
      ),
      "",
      "**Decision: no index.** No code path in this package lists all or resolved intents: natural delivery lists " +
        "pending intents of one run for one session, which the partial `pending_by_run` index serves, and every hot " +
        "call (claims, the sync pass) has its own partial index. The unindexed shapes are bounded diagnostics " +
        `(a scan of ${last === undefined ? "?" : power(last.size)} resolved intents costs ${last === undefined ? "?" : us(last.session.median)} µs here), ` +
        "while the two indexes would tax every `ensure` as measured above and grow with history. Should a UI ever " +
        "list history per session, add the session index then (the schema statements are idempotent)."
    ].join("\n")
    return { markdown, checks: [], goals: [] }
  }
}
