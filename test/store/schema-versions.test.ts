/**
 * Schema versions of the SQLite controller database (src/store/schema.ts): what a
 * fresh file records, that a file at this version opens without the write lock, that files of
 * a newer release or (read-only) of an older one are refused unchanged, that a failing
 * migration leaves nothing behind, and that processes opening one fresh file at once each
 * succeed while exactly one of them applies each migration.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { Database } from "../../src/store/database.ts"
import { CONTROLLER_SCHEMA, controllerSchemaStatements } from "../../src/store/schema.ts"
import { runMigrator } from "../../src/store/schema-versions.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { openStoreAt, rawDb, snapshotIntents, snapshotSchema } from "../support/store.ts"
import { tempDbPath } from "../support/temp-db.ts"
import { appliedBy, openAtOnce, opened } from "../races/open-race.ts"

const VERSIONS = [
  { migration_id: 1, name: "controller_store_v1" },
  { migration_id: 2, name: "turn_intent_cause_completed" },
  { migration_id: 3, name: "run_end_facts" },
  { migration_id: 4, name: "run_snapshots" },
  { migration_id: 5, name: "step_reminders" },
  { migration_id: 6, name: "run_event_adopted" },
  { migration_id: 7, name: "waits" },
  { migration_id: 8, name: "step_runner" }
]

const recorded = (path: string) =>
  Effect.scoped(
    Effect.map(rawDb(path), (db) =>
      db.prepare("SELECT migration_id, name FROM effect_sql_migrations ORDER BY migration_id").all()
    )
  )

/** Everything an open could change: schema objects, recorded versions, turn intents. */
const snapshot = (path: string) =>
  Effect.all({ schema: snapshotSchema(path), versions: recorded(path), intents: snapshotIntents(path) })

/** The file a release before schema versioning left: today's tables, no migrations table. */
const writeUnversionedFile = (path: string) => {
  const db = new BetterSqlite(path)
  db.pragma("journal_mode = WAL")
  for (const statement of controllerSchemaStatements) db.exec(statement)
  db.prepare("INSERT INTO pi_workflows_metadata (key, value) VALUES ('schema', ?)").run(CONTROLLER_SCHEMA)
  db.close()
}

const openFailure = (filename: string, readonly = false) =>
  Effect.flip(Layer.build(Database.layer({ filename, readonly })))

describe("schema versions (SQLite)", () => {
  it.scoped("a fresh file records every version in effect_sql_migrations", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* openStoreAt(path)
      expect(yield* recorded(path)).toEqual(VERSIONS)
    })
  )

  it.scoped(
    "a file at this version opens with no DDL: it opens while another connection holds the write lock",
    () =>
      Effect.gen(function* () {
        const path = yield* tempDbPath
        yield* Effect.scoped(openStoreAt(path))
        const schemaBefore = yield* snapshotSchema(path)
        const holder = yield* rawDb(path)
        holder.exec("BEGIN IMMEDIATE")
        const store = yield* openStoreAt(path, { busyTimeoutMs: 50 })
        holder.exec("ROLLBACK")
        yield* store.ensure(sampleIntent())
        expect(yield* snapshotSchema(path)).toEqual(schemaBefore)
      })
  )

  it.scoped("a file of a newer release is refused by every open, typed, and nothing changes", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* Effect.scoped(Effect.flatMap(openStoreAt(path), (store) => store.ensure(sampleIntent())))
      const db = yield* rawDb(path)
      db.prepare(
        "INSERT INTO effect_sql_migrations (migration_id, name) VALUES (99, 'from_a_later_release')"
      ).run()
      const before = yield* snapshot(path)
      for (const readonly of [false, true]) {
        const error = yield* openFailure(path, readonly)
        expect(error._tag).toBe("StoreFailure")
        expect(error.message).toContain("newer release")
        expect(error.message).toContain("99_from_a_later_release")
      }
      expect(yield* snapshot(path)).toEqual(before)
    })
  )

  it.scoped("a file at this version with another schema marker is refused with IncompatibleStore", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* Effect.scoped(openStoreAt(path))
      const db = yield* rawDb(path)
      db.prepare("UPDATE pi_workflows_metadata SET value = 'other.v9' WHERE key = 'schema'").run()
      const before = yield* snapshot(path)
      for (const readonly of [false, true]) {
        expect(yield* openFailure(path, readonly)).toMatchObject({
          _tag: "IncompatibleStore",
          found: "other.v9"
        })
      }
      expect(yield* snapshot(path)).toEqual(before)
    })
  )

  it.scoped("a read-only open never migrates: an unversioned file is reported as older, unchanged", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      writeUnversionedFile(path)
      const before = yield* snapshotSchema(path)
      const error = yield* openFailure(path, true)
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain("older schema version")
      expect(error.message).toContain(
        "1_controller_store_v1, 2_turn_intent_cause_completed, 3_run_end_facts, 4_run_snapshots, 5_step_reminders, 6_run_event_adopted, 7_waits, 8_step_runner"
      )
      expect(yield* snapshotSchema(path)).toEqual(before)
      // A writable open adopts it; read-only opens then succeed.
      yield* Effect.scoped(openStoreAt(path))
      expect(yield* recorded(path)).toEqual(VERSIONS)
      yield* Effect.scoped(Layer.build(Database.layer({ filename: path, readonly: true })))
    })
  )

  it.scoped("a failing migration is a typed StoreFailure and leaves nothing behind", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const context = yield* Layer.build(Database.layer({ filename: path }))
      const database = Context.get(context, Database)
      const sql = yield* Effect.provide(SqlClient.SqlClient, context)
      const before = yield* snapshot(path)
      const error = yield* Effect.flip(
        database.immediate(
          runMigrator({
            "10_creates_a_table": Effect.asVoid(sql.unsafe("CREATE TABLE t_ten (a TEXT)")),
            "11_broken": Effect.asVoid(sql.unsafe("CREATE TABLE t_eleven ("))
          }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        )
      )
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain('Migration "11_broken" failed')
      expect(yield* snapshot(path)).toEqual(before)
    })
  )

  it.scoped("4 processes opening one fresh file at once all succeed; exactly one applies each version", () =>
    Effect.gen(function* () {
      for (let round = 0; round < 3; round++) {
        const path = yield* tempDbPath
        const outcomes = yield* openAtOnce(path)
        // A failed open shows in the diff with its tag and message.
        expect(outcomes.map(opened)).toEqual(["opened", "opened", "opened", "opened"])
        expect(appliedBy(outcomes)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
        expect(yield* recorded(path)).toEqual(VERSIONS)
      }
    })
  )
})
