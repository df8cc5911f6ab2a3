import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import BetterSqlite from "better-sqlite3"
import { Effect, Layer, Schema } from "effect"
import { CONTROLLER_SCHEMA } from "../../src/store/schema.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { sampleIntent } from "../support/fixtures.ts"
import { openStoreAt, queryRows, rawDb, snapshotIntents, snapshotSchema } from "../support/store.ts"
import { tempDbPath, tempDir } from "../support/temp-db.ts"

/** Build the store layer on `filename` and return its failure (the test fails if it opens). */
const openFailure = (filename: string) => Effect.flip(Layer.build(layerSqlite({ filename })))

/** Write a file by hand with a raw connection, the way an earlier release would have left it. */
const handMade = (path: string, statements: ReadonlyArray<string>) =>
  Effect.sync(() => {
    const db = new BetterSqlite(path)
    db.pragma("journal_mode = WAL")
    for (const statement of statements) db.exec(statement)
    db.close()
  })

// The earlier alpha table: no CHECK on kind, so launch_failure rows could exist.
const legacyNotifications = `CREATE TABLE workflow_notifications (
  notification_id TEXT PRIMARY KEY NOT NULL,
  run_id TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  delivered_at TEXT
)`
const legacyMetadata = `CREATE TABLE pi_workflows_metadata (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
  INSERT INTO pi_workflows_metadata VALUES ('schema', '${CONTROLLER_SCHEMA}')`
const notification = (id: string, kind: string, deliveredAt: string | null) =>
  `INSERT INTO workflow_notifications VALUES ('${id}', 'run-1', 'session-1', '${kind}', '{}',
    '2026-08-20T10:00:00.000Z', ${deliveredAt === null ? "NULL" : `'${deliveredAt}'`})`

const notifications = (path: string) =>
  Effect.scoped(
    Effect.map(rawDb(path), (db) =>
      db.prepare("SELECT * FROM workflow_notifications ORDER BY notification_id").all()
    )
  )

describe("opening the controller database", () => {
  it.scoped("creates the schema and records the controller-store metadata on a fresh file", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* openStoreAt(path)
      const db = yield* rawDb(path)
      expect(db.prepare("SELECT key, value FROM pi_workflows_metadata").all()).toEqual([
        { key: "schema", value: "pi-workflows.controller-store.v1" }
      ])
      const names = queryRows(
        db,
        Schema.Struct({ name: Schema.String }),
        "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
      ).map((row) => row.name)
      // Other stores add their own tables; these are the ones this contract needs.
      expect(names).toEqual(
        expect.arrayContaining([
          "pi_workflows_metadata",
          "workflow_notifications",
          "workflow_turn_intents",
          "workflow_turn_intents_eligible_by_session",
          "workflow_turn_intents_identity_immutable",
          "workflow_turn_intents_pending_by_run",
          "workflow_turn_intents_resolved_immutable"
        ])
      )
    })
  )

  it.scoped("is idempotent: reopening keeps schema, metadata and data", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const first = yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* openStoreAt(path)
          return yield* store.ensure(sampleIntent())
        })
      )
      const schemaBefore = yield* snapshotSchema(path)
      const rowsBefore = yield* snapshotIntents(path)
      // Two more opens, one of them while another connection is still open.
      const a = yield* openStoreAt(path)
      const b = yield* openStoreAt(path)
      expect(yield* snapshotSchema(path)).toEqual(schemaBefore)
      expect(yield* snapshotIntents(path)).toEqual(rowsBefore)
      expect(yield* a.get(first.intentId)).toEqual(yield* b.get(first.intentId))
      const db = yield* rawDb(path)
      expect(db.prepare("SELECT count(*) AS n FROM pi_workflows_metadata").get()).toEqual({ n: 1 })
    })
  )

  it.scoped("sets WAL, synchronous NORMAL by default, busy timeout and foreign keys", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const context = yield* Layer.build(layerSqlite({ filename: path }))
      const sql = yield* Effect.provide(SqlClient.SqlClient, context)
      const pragma = (name: string) => sql.unsafe<Record<string, unknown>>(`PRAGMA ${name}`)
      expect(yield* pragma("journal_mode")).toEqual([{ journal_mode: "wal" }])
      expect(yield* pragma("synchronous")).toEqual([{ synchronous: 1 }])
      // SQLite's own (synchronous) busy wait is off: lock waits are retried asynchronously.
      expect(yield* pragma("busy_timeout")).toEqual([{ timeout: 0 }])
      expect(yield* pragma("foreign_keys")).toEqual([{ foreign_keys: 1 }])
    })
  )

  it.scoped("honours synchronous FULL and a custom busy timeout", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const context = yield* Layer.build(
        layerSqlite({ filename: path, synchronous: "FULL", busyTimeoutMs: 1234 })
      )
      const sql = yield* Effect.provide(SqlClient.SqlClient, context)
      expect(yield* sql.unsafe("PRAGMA synchronous")).toEqual([{ synchronous: 2 }])
      expect(yield* sql.unsafe("PRAGMA busy_timeout")).toEqual([{ timeout: 0 }])
    })
  )

  it.scoped("refuses a database of another schema with IncompatibleStore and changes nothing", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* handMade(path, [
        "CREATE TABLE pi_workflows_metadata (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
        "INSERT INTO pi_workflows_metadata VALUES ('schema', 'pi-workflows.controller-store.v2')"
      ])
      const before = yield* snapshotSchema(path)
      const error = yield* openFailure(path)
      expect(error._tag).toBe("IncompatibleStore")
      expect(error.message).toBe(
        `The database ${path} has schema "pi-workflows.controller-store.v2", expected "pi-workflows.controller-store.v1"`
      )
      expect(yield* snapshotSchema(path)).toEqual(before)
    })
  )

  it.scoped("stops on pending legacy launch_failure notifications without touching anything", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* handMade(path, [
        legacyMetadata,
        legacyNotifications,
        notification("n-1", "launch_failure", null),
        notification("n-2", "launch_failure", "2026-08-20T10:05:00.000Z"),
        notification("n-3", "progress", null)
      ])
      const schemaBefore = yield* snapshotSchema(path)
      const rowsBefore = yield* notifications(path)
      const error = yield* openFailure(path)
      expect(error._tag).toBe("LegacyLaunchNotifications")
      if (error._tag !== "LegacyLaunchNotifications") return
      expect(error.pending).toBe(1)
      expect(error.databasePath).toBe(path)
      // The message must tell the operator exactly how to reset.
      expect(error.message).toContain(`${path} has 1 pending launch_failure notification(s)`)
      expect(error.message).toContain("will not reinterpret or delete them")
      expect(error.message).toContain(`stop Pi, move ${path} (and its -wal and -shm files, if present) aside`)
      expect(error.message).toContain("a fresh store is created on open")
      // Nothing created, migrated or deleted.
      expect(yield* snapshotSchema(path)).toEqual(schemaBefore)
      expect(yield* notifications(path)).toEqual(rowsBefore)
      // A second attempt fails the same way: the refusal is stable, not a one-off.
      expect((yield* openFailure(path))._tag).toBe("LegacyLaunchNotifications")
    })
  )

  it.scoped("also stops on a legacy database that never recorded metadata", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* handMade(path, [
        legacyNotifications,
        notification("n-1", "launch_failure", null),
        notification("n-2", "launch_failure", null)
      ])
      const before = yield* snapshotSchema(path)
      const error = yield* openFailure(path)
      expect(error._tag === "LegacyLaunchNotifications" && error.pending).toBe(2)
      expect(yield* snapshotSchema(path)).toEqual(before)
    })
  )

  it.scoped("opens when legacy rows are delivered launch failures or passive progress/final reports", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      yield* handMade(path, [
        legacyMetadata,
        legacyNotifications,
        notification("n-1", "launch_failure", "2026-08-20T10:05:00.000Z"),
        notification("n-2", "progress", null),
        notification("n-3", "final", null)
      ])
      const rowsBefore = yield* notifications(path)
      const store = yield* openStoreAt(path)
      const intent = yield* store.ensure(sampleIntent())
      expect(intent.runId).toBe("run-1")
      // Old rows stay exactly as they were: no migration, no deletion.
      expect(yield* notifications(path)).toEqual(rowsBefore)
    })
  )

  it.scoped("reports a path in a missing directory as StoreFailure", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const path = join(dir, "missing", "controller.db")
      const error = yield* openFailure(path)
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain(`cannot open ${path}`)
    })
  )

  it.scoped("reports a file that is not a database as StoreFailure", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const path = join(dir, "controller.db")
      writeFileSync(
        path,
        "this is not a database, just some text that is long enough to have a header ".repeat(20)
      )
      const error = yield* openFailure(path)
      expect(error._tag).toBe("StoreFailure")
    })
  )

  it.scoped("turns a write lock held past the busy timeout into StoreFailure and writes nothing", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const context = yield* Layer.build(layerSqlite({ filename: path, busyTimeoutMs: 50 }))
      const store = yield* Effect.provide(TurnIntentStore, context)
      const holder = yield* rawDb(path)
      holder.exec("BEGIN IMMEDIATE")
      const error = yield* Effect.flip(store.ensure(sampleIntent()))
      holder.exec("ROLLBACK")
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toMatch(/locked|busy/i)
      expect(yield* snapshotIntents(path)).toEqual([])
      // Once the lock is gone the same call succeeds.
      expect((yield* store.ensure(sampleIntent())).runId).toBe("run-1")
    })
  )

  it.scopedLive(
    "a new file another connection holds while it is created: the open waits for it without blocking, then opens",
    () =>
      Effect.gen(function* () {
        const path = yield* tempDbPath
        // Another process creating the same new file: still in its first write, in rollback mode.
        const other = new BetterSqlite(path)
        other.exec("BEGIN IMMEDIATE; CREATE TABLE first_writer (x)")
        // It finishes on a timer, which only fires if the open leaves the event loop free.
        const done = setTimeout(() => {
          other.exec("COMMIT")
          other.close()
        }, 100)
        const opened = yield* Effect.either(
          Effect.scoped(Layer.build(layerSqlite({ filename: path, busyTimeoutMs: 2_000 })))
        )
        clearTimeout(done)
        if (other.open) other.close()
        expect(opened._tag).toBe("Right")
        const journal = yield* Effect.scoped(
          Effect.map(rawDb(path), (db) => db.pragma("journal_mode", { simple: true }))
        )
        expect(journal).toBe("wal")
      })
  )

  it.scopedLive("a new file held past the busy timeout: a typed StoreFailure naming the file", () =>
    Effect.gen(function* () {
      const path = yield* tempDbPath
      const other = new BetterSqlite(path)
      other.exec("BEGIN IMMEDIATE; CREATE TABLE first_writer (x)")
      const error = yield* Effect.flip(
        Effect.scoped(Layer.build(layerSqlite({ filename: path, busyTimeoutMs: 50 })))
      )
      other.exec("ROLLBACK")
      other.close()
      expect(error._tag).toBe("StoreFailure")
      expect(error.message).toContain(path)
      expect(error.message).toMatch(/locked|busy/i)
    })
  )
})
