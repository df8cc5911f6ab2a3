/**
 * The first-open race on PostgreSQL (postgres project only): four real processes open one new
 * database at the same moment, each through the real PG layer (src/store/pg/database-pg.ts,
 * which migrates under an advisory lock). Every open succeeds, exactly one process runs each
 * migration, `effect_sql_migrations` lists each version once, and the schema is the one a
 * lone open creates. A database a later release wrote is refused by every racing open.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import { CONTROLLER_SCHEMA } from "../../src/store/schema.ts"
import { rowsAt } from "../races/location.ts"
import { appliedBy, openAtOnce, opened } from "../races/open-race.ts"
import { freshPgDatabaseUrl, pgQuery } from "../support/backend.ts"

/**
 * Fresh databases raced per run. Without the advisory lock roughly 15-40 % of rounds (by
 * load) have two processes create effect_sql_migrations at once and one open fail; ten rounds
 * caught that in 13 of 14 runs.
 */
const ROUNDS = 10

const TABLES = [
  "effect_sql_migrations",
  "pi_workflows_metadata",
  "workflow_notifications",
  "workflow_requests",
  "workflow_run_events",
  "workflow_run_launches",
  "workflow_run_snapshots",
  "workflow_runs",
  "workflow_step_reminders",
  "workflow_steps",
  "workflow_turn_intents",
  "workflow_waits"
]

const execute = (url: string, text: string) => Effect.asVoid(Effect.promise(() => pgQuery(url, text)))

const recorded = (url: string) =>
  rowsAt(
    url,
    Schema.Struct({ migration_id: Schema.Number, name: Schema.String }),
    "SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id"
  )

const metadata = (url: string) =>
  rowsAt(
    url,
    Schema.Struct({ key: Schema.String, value: Schema.String }),
    "SELECT key, value FROM pi_workflows_metadata"
  )

/** Every schema object an open creates: columns, indexes, triggers, functions. */
const snapshotSchema = (url: string) =>
  rowsAt(
    url,
    Schema.Struct({ kind: Schema.String, name: Schema.String }),
    `SELECT 'column' AS kind, table_name || '.' || column_name || ' ' || data_type AS name
       FROM information_schema.columns WHERE table_schema = current_schema()
     UNION ALL SELECT 'index', tablename || '.' || indexname FROM pg_indexes
       WHERE schemaname = current_schema()
     UNION ALL SELECT DISTINCT 'trigger', event_object_table || '.' || trigger_name
       FROM information_schema.triggers WHERE trigger_schema = current_schema()
     UNION ALL SELECT 'function', proname || '/' || pronargs FROM pg_proc
       WHERE pronamespace = current_schema()::regnamespace
     ORDER BY 1, 2`
  )

const tables = (url: string) =>
  Effect.map(
    rowsAt(
      url,
      Schema.Struct({ table_name: Schema.String }),
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
    ),
    (rows) => rows.map((row) => row.table_name)
  )

describe("first opens racing on PostgreSQL", () => {
  it.scoped(
    "4 processes opening one new database at once all succeed; exactly one applies each version",
    () =>
      Effect.gen(function* () {
        // What a lone open creates: the schema every raced database must equal.
        const reference = yield* freshPgDatabaseUrl
        yield* Effect.scoped(Layer.build(DatabasePg.layer({ url: reference })))
        const expected = yield* snapshotSchema(reference)
        expect(yield* tables(reference)).toEqual(TABLES)

        let url = reference
        for (let round = 0; round < ROUNDS; round++) {
          url = yield* freshPgDatabaseUrl
          const outcomes = yield* openAtOnce(url)
          // A failed open shows in the diff with its tag and message.
          expect(outcomes.map(opened)).toEqual(["opened", "opened", "opened", "opened"])
          expect(appliedBy(outcomes)).toEqual([1, 3, 4, 5, 6, 7, 8])
          expect(yield* recorded(url)).toEqual([
            { migration_id: 1, name: "controller_store_v1" },
            { migration_id: 3, name: "run_end_facts" },
            { migration_id: 4, name: "run_snapshots" },
            { migration_id: 5, name: "step_reminders" },
            { migration_id: 6, name: "run_event_adopted" },
            { migration_id: 7, name: "waits" },
            { migration_id: 8, name: "step_runner" }
          ])
          expect(yield* metadata(url)).toEqual([{ key: "schema", value: CONTROLLER_SCHEMA }])
          expect(yield* snapshotSchema(url)).toEqual(expected)
        }

        // The last raced database, as a later release would leave it: every racing open refuses it.
        yield* execute(
          url,
          "INSERT INTO effect_sql_migrations (migration_id, name) VALUES (2, 'from_a_later_release')"
        )
        const before = { schema: yield* snapshotSchema(url), versions: yield* recorded(url) }
        const refusals = yield* openAtOnce(url)
        for (const outcome of refusals) {
          expect(outcome.code).toBe(0)
          expect(outcome.last).toMatchObject({ type: "failed", tag: "StoreFailure" })
          expect(outcome.last?.type === "failed" ? outcome.last.message : "").toContain(
            "2_from_a_later_release"
          )
        }
        expect({ schema: yield* snapshotSchema(url), versions: yield* recorded(url) }).toEqual(before)
      }),
    120_000
  )
})
