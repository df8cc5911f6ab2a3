/**
 * What the store sections run and what they compare with. The workload: intents with their
 * precomputed IDs, the layer under test, and the history the scaling section stores. The raw
 * floors: the store's statements, as the layer sends them (src/store/turn-intent-store-sql.ts
 * writes them as `sql` templates), each prepared once on a plain better-sqlite3 connection or
 * sent as named prepared statements on one plain `pg` client, with no checks and no row
 * decoding. store.ts verifies that the layer actually sends these texts (and nothing else) per op.
 */
import { createHash } from "node:crypto"
import Sqlite from "better-sqlite3"
import { Context, Effect, Layer, type Scope } from "effect"
import type pg from "pg"
import { encodeFactsJson, FACTS_SCHEMA, type FallbackFacts } from "../src/domain/facts.ts"
import { intentId } from "../src/domain/identity.ts"
import type { OpenError } from "../src/store/database.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../src/store/schema.ts"
import {
  type EnsureIntent,
  TurnIntentStore,
  type TurnIntentStoreService
} from "../src/store/turn-intent-store.ts"
import { layerSqlite } from "../src/store/turn-intent-store-sql.ts"

export const LEASE_MS = 60_000

/** Microseconds since an arbitrary origin. */
export const nowUs = (): number => performance.now() * 1000

/** Facts of a realistic size (a short reason), ~300 bytes of JSON. */
export const factsFor = (runId: string, nodeId: string | null): FallbackFacts => ({
  schema: FACTS_SCHEMA,
  workflowName: "review-and-fix",
  runId,
  observedState: "cancelled",
  cause: "agentCancelled",
  nodeId,
  attemptId: nodeId === null ? null : `${nodeId}-attempt-1`,
  reason: "The agent was cancelled by the user while the review node was waiting for tool output.",
  handoff: false
})

export interface Workload {
  readonly input: EnsureIntent
  readonly raw: RawIntent
}

/** One intent per index: its own run and target session, so every op touches exactly one row. */
export const workload = (prefix: string, index: number): Workload => {
  const run = `${prefix}-run-${index}`
  const session = `${prefix}-session-${index}`
  const nodeId = `node-${index % 7}`
  const input: EnsureIntent = {
    sourceEventId: `${prefix}-source-event-${index}`,
    runId: run,
    workflowRef: "review-and-fix@1",
    targetSessionId: session,
    cause: "agentCancelled",
    nodeId,
    attemptId: `${nodeId}-attempt-1`,
    facts: factsFor(run, nodeId)
  }
  const id = Effect.runSync(intentId(input))
  return {
    input,
    raw: {
      intentId: id,
      sourceEventId: input.sourceEventId,
      runId: run,
      workflowRef: input.workflowRef,
      targetSessionId: session,
      cause: input.cause,
      nodeId: input.nodeId,
      attemptId: input.attemptId,
      factsJson: encodeFactsJson(input.facts)
    }
  }
}

/** The store exactly as the package builds it (`layerSqlite`), scoped to the caller. */
export const openLayerStore = (
  filename: string,
  synchronous: Synchronous = "NORMAL"
): Effect.Effect<TurnIntentStoreService, OpenError, Scope.Scope> =>
  Effect.map(Layer.build(layerSqlite({ filename, synchronous })), (context) =>
    Context.get(context, TurnIntentStore)
  )

/** The row limit the bench's `list` and `claimEligibleForSession` ask for (a constant of the text). */
export const BENCH_LIMIT = 10

/** The store's texts for the bench's calls; the raw floor only drops the layer around them. */
export const SQL = {
  ensure: `INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id, workflow_ref,
      target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at, eligible_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (intent_id) DO NOTHING
    RETURNING *`,
  get: "SELECT * FROM workflow_turn_intents WHERE intent_id = ?",
  list: `SELECT * FROM workflow_turn_intents WHERE (target_session_id = ? AND run_id = ? AND resolved_at IS NULL)
    ORDER BY requested_at, intent_id LIMIT ${BENCH_LIMIT}`,
  claimForRun: `UPDATE workflow_turn_intents
    SET delivery_claim_token = ?, delivery_claim_expires_at = ?
    WHERE intent_id = (
      SELECT intent_id FROM workflow_turn_intents
      WHERE run_id = ? AND target_session_id = ?
        AND resolved_at IS NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ?
          OR delivery_claim_token = ?)
      ORDER BY requested_at, intent_id LIMIT 1)
    RETURNING *`,
  release: `UPDATE workflow_turn_intents
    SET delivery_claim_token = NULL, delivery_claim_expires_at = NULL
    WHERE intent_id = ? AND delivery_claim_token = ?
      AND resolved_at IS NULL
    RETURNING intent_id`,
  makeEligible: `UPDATE workflow_turn_intents
    SET eligible_at = coalesce(eligible_at, ?),
        fallback_facts_json = coalesce(?, fallback_facts_json)
    WHERE intent_id = ? AND resolved_at IS NULL
    RETURNING *`,
  probeEligible: `SELECT 1 FROM workflow_turn_intents
    WHERE target_session_id = ? AND resolved_at IS NULL AND eligible_at IS NOT NULL
      AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ? OR delivery_claim_token = ?)
    LIMIT 1`,
  claimEligibleForSession: `UPDATE workflow_turn_intents
    SET delivery_claim_token = ?, delivery_claim_expires_at = ?
    WHERE intent_id IN (
      SELECT intent_id FROM workflow_turn_intents
      WHERE target_session_id = ?
        AND resolved_at IS NULL AND eligible_at IS NOT NULL
        AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= ?
          OR delivery_claim_token = ?)
      ORDER BY eligible_at, intent_id LIMIT ${BENCH_LIMIT})
    RETURNING *`,
  resolve: `UPDATE workflow_turn_intents
    SET resolved_at = ?, resolution = ?,
        resolution_message_id = ?
    WHERE intent_id = ? AND resolved_at IS NULL
      AND delivery_claim_token = ? AND delivery_claim_expires_at > ?
    RETURNING *`
} as const

/** The ops the bench times; `probeEligible` is the first statement of `claimEligibleForSession`. */
export type OpName = Exclude<keyof typeof SQL, "probeEligible">

/** What the layer sends for each op, in order, on the path the store bench walks. */
export const SENT: Record<OpName, ReadonlyArray<string>> = {
  ensure: [SQL.ensure],
  get: [SQL.get],
  list: [SQL.list],
  claimForRun: [SQL.claimForRun],
  release: [SQL.release],
  makeEligible: [SQL.makeEligible],
  claimEligibleForSession: [SQL.probeEligible, SQL.claimEligibleForSession],
  resolve: [SQL.resolve]
}

export const normalizeSql = (text: string): string => text.replace(/\s+/g, " ").replace(/\( /g, "(").trim()

export type Synchronous = "NORMAL" | "FULL"

/** The same pragmas the Database layer sets, and the schema. */
export const openRaw = (filename: string, synchronous: Synchronous = "NORMAL"): Sqlite.Database => {
  const db = new Sqlite(filename)
  db.pragma("journal_mode = WAL")
  // The layer sets 0 too: it waits for another connection's lock asynchronously (busyTimeoutMs).
  db.pragma("busy_timeout = 0")
  db.pragma(`synchronous = ${synchronous}`)
  db.pragma("foreign_keys = ON")
  db.transaction(() => {
    for (const statement of controllerSchemaStatements) db.exec(statement)
    db.prepare(
      "INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO NOTHING"
    ).run(CONTROLLER_SCHEMA)
  }).immediate()
  return db
}

const iso = (millis: number) => new Date(millis).toISOString()

export interface RawIntent {
  readonly intentId: string
  readonly sourceEventId: string
  readonly runId: string
  readonly workflowRef: string
  readonly targetSessionId: string
  readonly cause: string
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly factsJson: string
}

/** The floor: statements prepared once; each method only binds parameters and steps. */
export class RawStore {
  private readonly statements: { readonly [K in OpName]: Sqlite.Statement }
  private readonly probe: Sqlite.Statement
  readonly db: Sqlite.Database

  constructor(db: Sqlite.Database) {
    this.db = db
    this.statements = {
      ensure: db.prepare(SQL.ensure),
      get: db.prepare(SQL.get),
      list: db.prepare(SQL.list),
      claimForRun: db.prepare(SQL.claimForRun),
      release: db.prepare(SQL.release),
      makeEligible: db.prepare(SQL.makeEligible),
      claimEligibleForSession: db.prepare(SQL.claimEligibleForSession),
      resolve: db.prepare(SQL.resolve)
    }
    this.probe = db.prepare(SQL.probeEligible)
  }

  ensure(intent: RawIntent, eligible = false): ReadonlyArray<unknown> {
    const requestedAt = iso(Date.now())
    return this.statements.ensure.all(
      intent.intentId,
      intent.sourceEventId,
      intent.runId,
      intent.workflowRef,
      intent.targetSessionId,
      intent.cause,
      intent.nodeId,
      intent.attemptId,
      intent.factsJson,
      requestedAt,
      eligible ? requestedAt : null
    )
  }

  /** One intent by ID: a single-row lookup (the statement stops at the first row). */
  get(intentId: string): unknown {
    return this.statements.get.get(intentId)
  }

  /** Pending intents of a run in a session, up to BENCH_LIMIT (a constant of the text). */
  list(targetSessionId: string, runId: string): ReadonlyArray<unknown> {
    return this.statements.list.all(targetSessionId, runId)
  }

  claimForRun(
    runId: string,
    targetSessionId: string,
    token: string,
    leaseMs: number
  ): ReadonlyArray<unknown> {
    const now = Date.now()
    return this.statements.claimForRun.all(token, now + leaseMs, runId, targetSessionId, now, token)
  }

  release(intentId: string, token: string): boolean {
    return this.statements.release.all(intentId, token).length > 0
  }

  makeEligible(intentId: string, factsJson: string | null = null): ReadonlyArray<unknown> {
    return this.statements.makeEligible.all(iso(Date.now()), factsJson, intentId)
  }

  /** The layer's SQL: the probe, and the claim only when the probe found something. */
  claimEligibleForSession(targetSessionId: string, token: string, leaseMs: number): ReadonlyArray<unknown> {
    const now = Date.now()
    if (this.probe.all(targetSessionId, now, token).length === 0) return []
    return this.statements.claimEligibleForSession.all(token, now + leaseMs, targetSessionId, now, token)
  }

  resolve(intentId: string, token: string, resolution: string, messageId: string): ReadonlyArray<unknown> {
    const now = Date.now()
    return this.statements.resolve.all(iso(now), resolution, messageId, intentId, token, now)
  }

  close(): void {
    this.db.close()
  }
}

/**
 * The SQLite texts in PostgreSQL's dialect. Most differ only in placeholders (`?` → `$n`). The
 * claims differ in substance: under READ COMMITTED two claimants of `UPDATE … WHERE intent_id IN
 * (SELECT … LIMIT n)` can pick the same rows from their snapshots, so on PostgreSQL the subquery
 * locks what it picks and skips what others hold (`FOR UPDATE SKIP LOCKED`), as the layer does.
 */
export const toPgDialect = (sqliteText: string): string => {
  const locked = sqliteText.startsWith("UPDATE workflow_turn_intents")
    ? sqliteText.replace(
        /LIMIT (\d+)\)/g,
        (_match, limit: string) => `LIMIT ${limit}\n      FOR UPDATE SKIP LOCKED)`
      )
    : sqliteText
  let n = 0
  return locked.replace(/\?/g, () => `$${++n}`)
}

/** The floor on PostgreSQL for the claims the scaling section times: named prepared statements. */
export class RawPg {
  constructor(readonly client: pg.Client) {}

  private async rows(op: keyof typeof SQL, values: ReadonlyArray<unknown>): Promise<number> {
    return (
      (await this.client.query({ name: op, text: toPgDialect(SQL[op]), values: [...values] })).rowCount ?? 0
    )
  }

  claimForRun = (runId: string, session: string, token: string) => {
    const now = Date.now()
    return this.rows("claimForRun", [token, now + LEASE_MS, runId, session, now, token])
  }
  /** As the layer does it: the read-only probe, then the claim only when it found something. */
  claimEligibleForSession = async (session: string, token: string) => {
    const now = Date.now()
    if ((await this.rows("probeEligible", [session, now, token])) === 0) return 0
    return this.rows("claimEligibleForSession", [token, now + LEASE_MS, session, now, token])
  }
}

/** The scaling workload: a fixed set of target sessions and runs, claimed again and again. */
export const TARGETS = 100
export const OTHER_PENDING = 1_000

const idFor = (tag: string) => `deferred-turn:${createHash("sha256").update(tag).digest("hex")}`

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

export type HistoryRow = readonly [string, string, string, string, string, string, ...Array<string | null>]

/**
 * The INSERT of `rows` history rows: `placeholder(n)` writes the n-th parameter (`?` for SQLite,
 * `$n+1` for PostgreSQL); the other columns are the same for every intent.
 */
export const historyInsert = (placeholder: (n: number) => string, rows = 1): string => {
  const values = (row: number) =>
    `(${HISTORY_COLUMNS.map((_, c) => placeholder(row * HISTORY_COLUMNS.length + c)).join(", ")}, ` +
    "'review-and-fix@1', 'agentCancelled', 'node-1', 'node-1-attempt-1')"
  return `INSERT INTO workflow_turn_intents (${HISTORY_COLUMNS.join(", ")}, workflow_ref, cause, node_id,
    attempt_id) VALUES ${Array.from({ length: rows }, (_, row) => values(row)).join(", ")}`
}

/**
 * `resolvedHistory` resolved intents spread over the very sessions and runs being claimed,
 * OTHER_PENDING eligible intents of other sessions, and per target an eligible and a pending one.
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
