/**
 * The claim-cost-vs-history workload both backends' scaling benches time: a fixed set of target
 * sessions and runs (re-claims by the same claimant are idempotent, so one set serves every
 * call), the history stored under them, the claims timed on each, and the row count each must
 * touch.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { TurnIntentStoreService } from "../src/store/turn-intent-store.ts"
import { factsFor, LEASE_MS } from "./fixtures.ts"

export const TARGETS = 100
export const OTHER_PENDING = 1_000
/** The most a claim may slow down from the smallest history to the largest. */
export const GROWTH_LIMIT = 1.5

export type ScaleOp = "syncPass" | "claimEligibleForSession" | "claimForRun"
export const SCALE_OPS: ReadonlyArray<ScaleOp> = ["syncPass", "claimEligibleForSession", "claimForRun"]
/** Expected row count per call, so a broken setup cannot time no-ops. */
const EXPECTED: Record<ScaleOp, number> = { syncPass: 0, claimEligibleForSession: 1, claimForRun: 1 }

export const checkCount = (op: ScaleOp, count: number) => {
  if (count !== EXPECTED[op]) throw new Error(`scaling ${op}: expected ${EXPECTED[op]} rows, got ${count}`)
}

export const idFor = (tag: string) => `deferred-turn:${createHash("sha256").update(tag).digest("hex")}`

/** The keys of the k-th target of each kind. */
export const target = {
  idle: (k: number) => ({ session: `idle-session-${k}`, run: `idle-run-${k}` }),
  eligible: (k: number) => ({ session: `eligible-session-${k}`, run: `eligible-run-${k}` }),
  claim: (k: number) => ({ session: `claim-session-${k}`, run: `claim-run-${k}` })
}

export const token = (k: number) => `scaling-token-${k}`

/** The columns a history row gives values for, in `historyRows` order. */
const HISTORY_COLUMNS = [
  "intent_id",
  "source_event_id",
  "run_id",
  "target_session_id",
  "fallback_facts_json",
  "requested_at",
  "eligible_at",
  "resolved_at",
  "resolution",
  "resolution_message_id"
] as const

export type HistoryRow = readonly [
  string,
  string,
  string,
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null
]

/**
 * The INSERT of `rows` history rows: `placeholders(n)` writes the n-th parameter (`?` for
 * SQLite, `$n+1` for PostgreSQL), one a `HistoryRow` value; the other columns are the same for
 * every intent.
 */
export const historyInsert = (placeholders: (column: number) => string, rows = 1): string => {
  const list = (row: number) =>
    `(${HISTORY_COLUMNS.map((_, c) => placeholders(row * HISTORY_COLUMNS.length + c)).join(", ")}, ` +
    "'review-and-fix@1', 'agentCancelled', 'node-1', 'node-1-attempt-1')"
  return `INSERT INTO workflow_turn_intents (${HISTORY_COLUMNS.join(", ")}, workflow_ref, cause, node_id,
    attempt_id) VALUES ${Array.from({ length: rows }, (_, row) => list(row)).join(", ")}`
}

/**
 * The stored intents both scaling benches claim over: `resolvedHistory` resolved intents spread
 * over the very sessions and runs being claimed, OTHER_PENDING eligible intents of other
 * sessions, and per target an eligible intent and a pending one.
 */
export function* historyRows(resolvedHistory: number): Generator<HistoryRow> {
  const at = (offsetMs: number) => new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString()
  const row = (
    tag: string,
    keys: { readonly run: string; readonly session: string },
    when: number,
    eligible: boolean,
    resolved: boolean
  ): HistoryRow => [
    idFor(tag),
    `source-${tag}`,
    keys.run,
    keys.session,
    JSON.stringify(factsFor(keys.run, "node-1")),
    at(when),
    eligible ? at(when + 1) : null,
    resolved ? at(when + 2) : null,
    resolved ? "fallback" : null,
    resolved ? `message-${tag}` : null
  ]
  const kinds = [target.idle, target.eligible, target.claim]
  for (let h = 0; h < resolvedHistory; h++) {
    yield row(`history-${h}`, (kinds[h % 3] ?? target.idle)(Math.floor(h / 3) % TARGETS), h, true, true)
  }
  for (let j = 0; j < OTHER_PENDING; j++) {
    const keys = { run: `other-run-${j}`, session: `other-session-${j % 100}` }
    yield row(`other-${j}`, keys, resolvedHistory + j, true, false)
  }
  for (let k = 0; k < TARGETS; k++) {
    yield row(`eligible-${k}`, target.eligible(k), resolvedHistory + OTHER_PENDING + k, true, false)
    yield row(`claim-${k}`, target.claim(k), resolvedHistory + OTHER_PENDING + k, false, false)
  }
}

/** One timed call through the layer; the number of rows it touched. */
export const layerCall = (store: TurnIntentStoreService, op: ScaleOp, k: number) =>
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
