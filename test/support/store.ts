/**
 * Store harness: a TurnIntentStore on a real SQLite file in a scoped temp directory, plus a raw
 * better-sqlite3 handle on the same file for assertions the store API cannot make (snapshots,
 * constraint and trigger checks).
 */
import BetterSqlite from "better-sqlite3"
import { Effect, Layer, Schema } from "effect"
import type { DatabaseOptions } from "../../src/store/database.ts"
import { TurnIntentStore } from "../../src/store/turn-intent-store.ts"
import { layerTurnIntentStorePg } from "../../src/store/pg/database-pg.ts"
import { layerSqlite } from "../../src/store/turn-intent-store-sql.ts"
import { freshLocation, isPgLocation, pgQuery } from "./backend.ts"

/** Open the store at `location` (a SQLite file, or a PostgreSQL URL) for the current scope. */
export const openStoreAt = (location: string, options: Omit<DatabaseOptions, "filename"> = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      isPgLocation(location)
        ? layerTurnIntentStorePg({ url: location, ...options })
        : layerSqlite({ filename: location, ...options })
    )
    return yield* Effect.provide(TurnIntentStore, context)
  })

/**
 * A store at a fresh location of the current backend (test/support/backend.ts); returns the
 * store and the location (`path`: a file path on SQLite, a URL on PostgreSQL).
 */
export const openStore = (options: Omit<DatabaseOptions, "filename"> = {}) =>
  Effect.gen(function* () {
    const path = yield* freshLocation
    const store = yield* openStoreAt(path, options)
    return { store, path }
  })

/** A raw connection to the same file, closed with the scope. */
export const rawDb = (path: string) =>
  Effect.acquireRelease(
    Effect.sync(() => new BetterSqlite(path)),
    (db) => Effect.sync(() => db.close())
  )

/** Every turn-intent row, in key order: compare two snapshots to prove nothing was written. */
export const snapshotIntents = (path: string) =>
  isPgLocation(path)
    ? Effect.promise(() => pgQuery(path, "SELECT * FROM workflow_turn_intents ORDER BY intent_id"))
    : Effect.scoped(
        Effect.map(rawDb(path), (db) =>
          db.prepare("SELECT * FROM workflow_turn_intents ORDER BY intent_id").all()
        )
      )

/** The schema objects of a database file: compare two of these to prove nothing was created. */
export const snapshotSchema = (path: string) =>
  Effect.scoped(
    Effect.map(rawDb(path), (db) =>
      db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all()
    )
  )

/** Run a raw query and decode its rows with `schema`: raw results are checked, never cast. */
export const queryRows = <A, I>(
  db: BetterSqlite.Database,
  schema: Schema.Schema<A, I>,
  sql: string,
  ...params: ReadonlyArray<unknown>
): ReadonlyArray<A> => Schema.decodeUnknownSync(Schema.Array(schema))(db.prepare(sql).all(...params))
