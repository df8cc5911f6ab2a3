/**
 * Where a cross-process race runs: a SQLite file path or a PostgreSQL URL (the race tests run
 * in both vitest projects; test/support/backend.ts picks the location). Workers open the stores
 * at it as the app does; the test reads the rows back with a raw client of the same backend.
 * No vitest import here: the workers load this file too.
 */
import BetterSqlite from "better-sqlite3"
import { Effect, Layer, Schema } from "effect"
import pg from "pg"
import { Database } from "../../src/store/database.ts"
import { layer as layerDatabasePg } from "../../src/store/pg/database-pg.ts"
import * as RunStoreSql from "../../src/store/run-store-sql.ts"
import * as TurnIntentStoreSql from "../../src/store/turn-intent-store-sql.ts"

export const isPgLocation = (location: string) => /^postgres(ql)?:\/\//.test(location)

/** The controller database at `location`, as the app opens it (one pool per process on PostgreSQL). */
export const databaseAt = (location: string) =>
  isPgLocation(location) ? layerDatabasePg({ url: location }) : Database.layer({ filename: location })

/** TurnIntentStore + RunStore at `location`, both on one connection (pool), as src/app/layers.ts. */
export const storesAt = (location: string) =>
  Layer.merge(TurnIntentStoreSql.layer, RunStoreSql.layer).pipe(Layer.provideMerge(databaseAt(location)))

/** Every row of `sql` at `location`, decoded with `schema` (raw rows are checked, never cast). */
export const rowsAt = <A, I>(location: string, schema: Schema.Schema<A, I>, sql: string) =>
  Effect.promise(async (): Promise<ReadonlyArray<unknown>> => {
    if (!isPgLocation(location)) {
      const db = new BetterSqlite(location, { readonly: true })
      try {
        return db.prepare(sql).all()
      } finally {
        db.close()
      }
    }
    const client = new pg.Client({ connectionString: location })
    // int8 columns (epoch milliseconds, counts) as numbers, as the store reads them.
    client.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value))
    await client.connect()
    try {
      return (await client.query(sql)).rows
    } finally {
      await client.end()
    }
  }).pipe(Effect.map(Schema.decodeUnknownSync(Schema.Array(schema))))
