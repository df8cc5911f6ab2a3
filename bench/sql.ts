/**
 * The raw floor: the store's statements, as the layer sends them (src/store/turn-intent-store-sqlite.ts
 * writes them as `sql` templates), on a plain better-sqlite3 connection, each prepared once, no
 * checks and no row decoding. `store.ts` verifies that the layer actually sends these texts (and
 * nothing else) per op.
 */
import Sqlite from "better-sqlite3"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../src/store/schema.ts"

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

  /** The claim UPDATE alone, as before the probe: it takes the write lock even when it matches nothing. */
  claimEligibleWithoutProbe(targetSessionId: string, token: string, leaseMs: number): ReadonlyArray<unknown> {
    const now = Date.now()
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
