/**
 * A controller database written before `completed` was a turn intent cause (and before schema
 * versions were recorded) opens, keeps every row, index and trigger, accepts the new cause and
 * records the versions it is now at. The old file is built from the very DDL the
 * earlier version ran: today's statements with `completed` taken out of the cause CHECK.
 */
import { describe, expect, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { Effect, Option } from "effect"
import { encodeFactsJson } from "../../src/domain/facts.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../../src/store/schema.ts"
import { sampleFacts, sampleIntent } from "../support/fixtures.ts"
import { openStoreAt, rawDb, snapshotIntents, snapshotSchema } from "../support/store.ts"
import { tempDbPath } from "../support/temp-db.ts"

const NEW_CAUSE = ",\n     'completed'"

const writeOldFile = (path: string) => {
  const db = new BetterSqlite(path)
  try {
    db.pragma("journal_mode = WAL")
    for (const statement of controllerSchemaStatements) {
      db.exec(
        statement.includes("CREATE TABLE IF NOT EXISTS workflow_turn_intents (")
          ? statement.replace(NEW_CAUSE, "")
          : statement
      )
    }
    db.prepare("INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ?)").run(CONTROLLER_SCHEMA)
    const insert = db.prepare(`INSERT INTO workflow_turn_intents (intent_id, source_event_id, run_id,
      workflow_ref, target_session_id, cause, node_id, attempt_id, fallback_facts_json, requested_at,
      eligible_at, resolved_at, resolution, resolution_message_id, delivery_claim_token,
      delivery_claim_expires_at) VALUES (?, ?, ?, 'greet', 's1', ?, 'n', 'a', ?, '2026-11-30T08:00:00.000Z',
      ?, ?, ?, ?, ?, ?)`)
    const facts = encodeFactsJson(sampleFacts())
    insert.run(
      "deferred-turn:old-pending",
      "e1",
      "run-1",
      "failed",
      facts,
      "2026-11-30T08:00:01.000Z",
      null,
      null,
      null,
      "tok",
      4_102_444_800_000
    )
    insert.run(
      "deferred-turn:old-resolved",
      "e2",
      "run-2",
      "timedOut",
      facts,
      null,
      "2026-11-30T08:00:02.000Z",
      "workflowPrompt",
      "m2",
      null,
      null
    )
    // The old CHECK refuses the new cause: this really is the earlier schema.
    expect(() =>
      insert.run("deferred-turn:x", "e3", "run-3", "completed", facts, null, null, null, null, null, null)
    ).toThrow(/CHECK constraint failed/)
  } finally {
    db.close()
  }
}

describe("opening a database of the earlier schema", () => {
  it.scoped("upgrades the cause CHECK in place: rows, indexes and triggers kept; `completed` accepted", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      writeOldFile(path)
      const rowsBefore = yield* snapshotIntents(path)
      const objectsBefore = (yield* snapshotSchema(path)).length
      const store = yield* openStoreAt(path)
      expect(yield* snapshotIntents(path)).toEqual(rowsBefore)
      const schema = yield* snapshotSchema(path)
      // Same objects (table, its two indexes and two triggers included), no leftover table; the
      // new ones: the table of the schema versions the file is now at, and version 4's run
      // snapshots (table, primary-key index, immutability trigger) and version 5's step reminders
      // (table, primary-key index, index by run), version 7's waits (the same three).
      const ours = schema.filter(
        (o) =>
          !/effect_sql_migrations|workflow_run_snapshots|workflow_step_reminders|workflow_waits/.test(
            JSON.stringify(o)
          )
      )
      expect(ours.length).toBe(objectsBefore)
      expect(schema.length).toBe(objectsBefore + 10)
      const db = yield* rawDb(path)
      expect(
        db.prepare("SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id").all()
      ).toEqual([
        { migration_id: 1, name: "controller_store_v1" },
        { migration_id: 2, name: "turn_intent_cause_completed" },
        { migration_id: 3, name: "run_end_facts" },
        { migration_id: 4, name: "run_snapshots" },
        { migration_id: 5, name: "step_reminders" },
        { migration_id: 6, name: "run_event_adopted" },
        { migration_id: 7, name: "waits" },
        { migration_id: 8, name: "step_runner" }
      ])
      expect(JSON.stringify(schema)).not.toContain("workflow_turn_intents_next")
      const created = yield* store.ensure(sampleIntent({ cause: "completed", runId: "run-3" }))
      expect(created.cause).toBe("completed")
      expect(Option.getOrThrow(yield* store.get("deferred-turn:old-pending")).deliveryClaimToken).toBe("tok")
      // The trigger that guards resolved rows came back with the table.
      expect(() =>
        db
          .prepare("UPDATE workflow_turn_intents SET eligible_at = 'x' WHERE intent_id = ?")
          .run("deferred-turn:old-resolved")
      ).toThrow(/resolved turn intents are immutable/)
    })
  )

  it.scoped("a second open changes nothing", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      writeOldFile(path)
      yield* Effect.scoped(openStoreAt(path))
      const schema = yield* snapshotSchema(path)
      const rows = yield* snapshotIntents(path)
      yield* Effect.scoped(openStoreAt(path))
      expect(yield* snapshotSchema(path)).toEqual(schema)
      expect(yield* snapshotIntents(path)).toEqual(rows)
    })
  )
})
