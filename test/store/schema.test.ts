import { describe, expect, it } from "@effect/vitest"
import type BetterSqlite from "better-sqlite3"
import { Effect, Option, Schema } from "effect"
import { encodeFactsJson } from "../../src/domain/facts.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { openStore, queryRows, rawDb, snapshotIntents } from "../support/store.ts"

type Row = Record<string, string | number | null>

const validRow = (overrides: Row = {}): Row => ({
  intent_id: "deferred-turn:raw",
  source_event_id: "e-raw",
  run_id: "run-1",
  workflow_ref: "autoimplement",
  target_session_id: "session-1",
  cause: "failed",
  node_id: null,
  attempt_id: null,
  fallback_facts_json: encodeFactsJson(sampleFacts()),
  requested_at: "2026-08-21T08:00:00.000Z",
  eligible_at: null,
  resolved_at: null,
  resolution: null,
  resolution_message_id: null,
  delivery_claim_token: null,
  delivery_claim_expires_at: null,
  ...overrides
})

const insert = (db: BetterSqlite.Database, row: Row) => {
  const columns = Object.keys(row)
  db.prepare(
    `INSERT INTO workflow_turn_intents (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`
  ).run(row)
}

describe("workflow_turn_intents constraints", () => {
  it.scoped("accepts a well-formed row written by hand (the baseline for the cases below)", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      insert(yield* rawDb(path), validRow())
      const stored = Option.getOrThrow(yield* store.get("deferred-turn:raw"))
      expect(stored.facts).toEqual(sampleFacts())
    })
  )

  const broken: ReadonlyArray<readonly [string, Row, RegExp]> = [
    ["empty intent_id", { intent_id: "" }, /CHECK constraint failed/],
    ["513-character intent_id", { intent_id: "i".repeat(513) }, /CHECK constraint failed/],
    ["empty run_id", { run_id: "" }, /CHECK constraint failed/],
    ["513-character target_session_id", { target_session_id: "s".repeat(513) }, /CHECK constraint failed/],
    ["empty workflow_ref", { workflow_ref: "" }, /CHECK constraint failed/],
    ["unknown cause", { cause: "userEscape" }, /CHECK constraint failed/],
    ["empty node_id", { node_id: "" }, /CHECK constraint failed/],
    ["513-character attempt_id", { attempt_id: "a".repeat(513) }, /CHECK constraint failed/],
    ["facts over 64 KiB", { fallback_facts_json: "x".repeat(65_537) }, /CHECK constraint failed/],
    ["unknown resolution", resolvedWith({ resolution: "retry" }), /CHECK constraint failed/],
    ["resolved_at without the other fields", { resolved_at: "2026-08-21T08:01:00.000Z" }, /CHECK/],
    ["resolution without resolved_at", resolvedWith({ resolved_at: null }), /CHECK constraint failed/],
    [
      "resolution without message ID",
      resolvedWith({ resolution_message_id: null }),
      /CHECK constraint failed/
    ],
    ["claim token without expiry", { delivery_claim_token: "t" }, /CHECK constraint failed/],
    ["claim expiry without token", { delivery_claim_expires_at: 1 }, /CHECK constraint failed/],
    [
      "text claim expiry (STRICT)",
      { delivery_claim_token: "t", delivery_claim_expires_at: "soon" },
      /cannot store TEXT/
    ],
    ["missing facts", { fallback_facts_json: null }, /NOT NULL constraint failed/],
    ["missing requested_at", { requested_at: null }, /NOT NULL constraint failed/]
  ]

  function resolvedWith(overrides: Row): Row {
    return {
      resolved_at: "2026-08-21T08:01:00.000Z",
      resolution: "fallback",
      resolution_message_id: "m",
      ...overrides
    }
  }

  it.scoped.each(broken)("rejects a raw insert with %s", ([, overrides, error]) =>
    Effect.gen(function* () {
      const { path } = yield* openStore()
      const db = yield* rawDb(path)
      expect(() => insert(db, validRow(overrides))).toThrow(error)
      expect(yield* snapshotIntents(path)).toEqual([])
    })
  )

  it.scoped("rejects a raw update that leaves a row half-resolved", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const intent = yield* store.ensure(sampleIntent())
      const before = yield* snapshotIntents(path)
      const db = yield* rawDb(path)
      expect(() =>
        db
          .prepare(
            "UPDATE workflow_turn_intents SET resolved_at = 'now', resolution = 'fallback' WHERE intent_id = ?"
          )
          .run(intent.intentId)
      ).toThrow(/CHECK constraint failed/)
      expect(yield* snapshotIntents(path)).toEqual(before)
    })
  )
})

describe("workflow_turn_intents triggers", () => {
  it.scoped("make a resolved row immutable at the database level", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const intent = yield* store.ensure(sampleIntent())
      yield* store.claimForRun({ runId: "run-1", targetSessionId: "session-1", token: "t", leaseMs: 1_000 })
      yield* store.resolve({ intentId: intent.intentId, token: "t", resolution: "fallback", messageId: "m" })
      const before = yield* snapshotIntents(path)
      const db = yield* rawDb(path)
      for (const assignment of [
        "resolved_at = NULL, resolution = NULL, resolution_message_id = NULL",
        "resolution = 'workflowPrompt'",
        "delivery_claim_token = NULL, delivery_claim_expires_at = NULL",
        "eligible_at = '2026-08-21T09:00:00.000Z'",
        "fallback_facts_json = '{}'"
      ]) {
        expect(() =>
          db
            .prepare(`UPDATE workflow_turn_intents SET ${assignment} WHERE intent_id = ?`)
            .run(intent.intentId)
        ).toThrow("resolved turn intents are immutable")
      }
      expect(yield* snapshotIntents(path)).toEqual(before)
    })
  )

  it.scoped("make identity and source fields immutable on pending rows too", () =>
    Effect.gen(function* () {
      const { store, path } = yield* openStore()
      const intent = yield* store.ensure(sampleIntent())
      const before = yield* snapshotIntents(path)
      const db = yield* rawDb(path)
      for (const column of [
        "intent_id",
        "source_event_id",
        "run_id",
        "workflow_ref",
        "target_session_id",
        "node_id",
        "attempt_id",
        "requested_at"
      ]) {
        expect(() =>
          db
            .prepare(`UPDATE workflow_turn_intents SET ${column} = 'changed' WHERE intent_id = ?`)
            .run(intent.intentId)
        ).toThrow("turn intent identity is immutable")
      }
      expect(() =>
        db
          .prepare("UPDATE workflow_turn_intents SET cause = 'timedOut' WHERE intent_id = ?")
          .run(intent.intentId)
      ).toThrow("turn intent identity is immutable")
      expect(yield* snapshotIntents(path)).toEqual(before)
      // Mutable coordination fields still change.
      db.prepare("UPDATE workflow_turn_intents SET eligible_at = 'x' WHERE intent_id = ?").run(
        intent.intentId
      )
    })
  )
})

describe("workflow_turn_intents indexes", () => {
  it.scoped("has both partial indexes over pending rows", () =>
    Effect.gen(function* () {
      const { path } = yield* openStore()
      const db = yield* rawDb(path)
      const indexes = queryRows(
        db,
        Schema.Struct({ name: Schema.String, sql: Schema.String }),
        `SELECT name, sql FROM sqlite_master
          WHERE type = 'index' AND tbl_name = 'workflow_turn_intents' AND sql IS NOT NULL ORDER BY name`
      )
      expect(indexes.map((index) => index.name)).toEqual([
        "workflow_turn_intents_eligible_by_session",
        "workflow_turn_intents_pending_by_run"
      ])
      const Named = Schema.Struct({ name: Schema.String })
      const columns = (name: string) => queryRows(db, Named, `PRAGMA index_info(${name})`).map((c) => c.name)
      expect(columns("workflow_turn_intents_pending_by_run").slice(0, 2)).toEqual([
        "run_id",
        "target_session_id"
      ])
      expect(columns("workflow_turn_intents_eligible_by_session")).toEqual([
        "target_session_id",
        "eligible_at",
        "intent_id"
      ])
      const partial = queryRows(
        db,
        Schema.Struct({ name: Schema.String, partial: Schema.Number }),
        "SELECT name, partial FROM pragma_index_list('workflow_turn_intents') WHERE origin = 'c' ORDER BY name"
      )
      expect(partial).toEqual([
        { name: "workflow_turn_intents_eligible_by_session", partial: 1 },
        { name: "workflow_turn_intents_pending_by_run", partial: 1 }
      ])
      const [bySession, byRun] = indexes
      expect(bySession?.sql).toMatch(/WHERE resolved_at IS NULL AND eligible_at IS NOT NULL$/)
      expect(byRun?.sql).toMatch(/WHERE resolved_at IS NULL$/)
    })
  )

  it.scoped("are what the claim queries use", () =>
    Effect.gen(function* () {
      const { path } = yield* openStore()
      const db = yield* rawDb(path)
      const plan = (query: string) =>
        queryRows(db, Schema.Struct({ detail: Schema.String }), `EXPLAIN QUERY PLAN ${query}`)
          .map((step) => step.detail)
          .join("\n")
      expect(
        plan(`SELECT intent_id FROM workflow_turn_intents
          WHERE target_session_id = 's' AND resolved_at IS NULL AND eligible_at IS NOT NULL
            AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= 5 OR delivery_claim_token = 't')
          ORDER BY eligible_at, intent_id LIMIT 10`)
      ).toContain("workflow_turn_intents_eligible_by_session")
      expect(
        plan(`SELECT intent_id FROM workflow_turn_intents
          WHERE run_id = 'r' AND target_session_id = 's' AND resolved_at IS NULL
            AND (delivery_claim_token IS NULL OR delivery_claim_expires_at <= 5 OR delivery_claim_token = 't')
          ORDER BY requested_at, intent_id LIMIT 1`)
      ).toContain("workflow_turn_intents_pending_by_run")
    })
  )
})
