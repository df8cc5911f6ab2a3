/**
 * Which database the operator CLI reads and how it opens it: `--db`, else `PI_WORKFLOWS_DB`,
 * else this project's file; a SQLite file read-only (short lock waits) or a PostgreSQL
 * database on read-only connections. Before any store reads a table, a database the stores
 * cannot read as it is is refused from its structure, changing nothing.
 */
import { existsSync, statSync } from "node:fs"
import { resolve } from "node:path"
import { Effect, Layer, Option } from "effect"
import { isPostgresUrl, resolveDbPath } from "../app/db-path.ts"
import { Database } from "../store/database.ts"
import { isNotADatabase, readability, readShape, refusal, StoreRefused } from "../store/operator-reads.ts"
import * as LaunchStoreSql from "../store/launch-store-sql.ts"
import * as RunStoreSql from "../store/run-store-sql.ts"
import { StoreFailure } from "../store/store-errors.ts"
import * as TurnIntentStoreSql from "../store/turn-intent-store-sql.ts"
import { CliFailure } from "./format.ts"
import { databasesBeside, missingDatabase } from "./lookup.ts"

/**
 * How long a read waits for a lock. WAL readers never wait for a writer, so this only matters
 * when the file is being recovered or held exclusively; then the CLI says "busy" quickly
 * instead of stalling a live Pi's user.
 */
export const BUSY_TIMEOUT_MS = 50

/**
 * The database to read: `--db` (a postgres:// URL, or a path relative to the working directory),
 * else `PI_WORKFLOWS_DB` (a URL or an absolute path), else where the extension keeps this
 * project's file.
 */
export const databasePath = (db: Option.Option<string>) =>
  Effect.try({
    try: () =>
      Option.match(db, {
        onNone: () => resolveDbPath(process.cwd(), process.env),
        onSome: (location) => (isPostgresUrl(location) ? location : resolve(process.cwd(), location))
      }),
    catch: (error) =>
      new CliFailure({ message: error instanceof Error ? error.message : String(error), exitCode: 2 })
  })

/** How long the CLI waits for a PostgreSQL server before saying it cannot be reached. */
export const CONNECT_TIMEOUT_MS = 5_000

/** The PostgreSQL module, loaded only when a URL is given (as the extension loads it). */
const loadPg = Effect.tryPromise({
  try: () => import("../store/pg/database-pg.ts"),
  catch: (cause) =>
    new StoreFailure({
      operation: "open",
      message: `PostgreSQL support cannot load (is @effect/sql-pg installed?): ${String(cause)}`,
      cause
    })
})

const storesAt = (location: string) =>
  Layer.mergeAll(TurnIntentStoreSql.layer, RunStoreSql.layer, LaunchStoreSql.layer).pipe(
    Layer.provideMerge(
      isPostgresUrl(location)
        ? Layer.unwrapEffect(
            Effect.map(loadPg, (pg) =>
              pg.layer({
                url: location,
                readonly: true,
                busyTimeoutMs: BUSY_TIMEOUT_MS,
                connectTimeoutMs: CONNECT_TIMEOUT_MS,
                maxConnections: 2
              })
            )
          )
        : Database.layer({ filename: location, readonly: true, busyTimeoutMs: BUSY_TIMEOUT_MS })
    )
  )

export type Stores = Layer.Layer.Success<ReturnType<typeof storesAt>>

/**
 * Before any store reads a table: a database the stores cannot read as it is (legacy rows in a
 * file Pi refuses, a table missing) is refused from its structure, changing nothing.
 */
const readable = (shown: string, postgres: boolean) =>
  Effect.flatMap(readShape, (shape) => {
    const refused = refusal(shown, postgres, readability(shape))
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/** An open that failed because the file is no SQLite database at all, said so plainly. */
const notADatabase =
  (shown: string) =>
  <E>(error: E): E | StoreRefused =>
    error instanceof StoreFailure && isNotADatabase(error)
      ? new StoreRefused({
          databasePath: shown,
          postgres: false,
          reason: "notADatabase",
          pending: 0,
          missing: []
        })
      : error

/** Run `program` over the stores of the database, opened read-only (given the name it shows). */
export const withStores = <A, E>(
  db: Option.Option<string>,
  program: (path: string) => Effect.Effect<A, E, Stores>
) =>
  Effect.gen(function* () {
    const location = yield* databasePath(db)
    if (isPostgresUrl(location)) {
      const pg = yield* loadPg
      const shown = pg.redactUrl(location)
      return yield* Effect.provide(Effect.zipRight(readable(shown, true), program(shown)), storesAt(location))
    }
    const path = location
    const exists = yield* Effect.sync(() => fileExists(path))
    if (!exists) {
      // The default file (keyed by this directory): name the databases beside it instead.
      const byDirectory = Option.isNone(db) && (process.env.PI_WORKFLOWS_DB ?? "") === ""
      return yield* new CliFailure({
        message: byDirectory
          ? missingDatabase(path, databasesBeside(path))
          : `no controller database at ${path} (pass --db PATH or set PI_WORKFLOWS_DB)`,
        exitCode: 2
      })
    }
    return yield* Effect.provide(
      Effect.zipRight(readable(path, false), program(path)),
      Layer.mapError(storesAt(path), notADatabase(path))
    )
  })

const fileExists = (path: string): boolean => existsSync(path) && statSync(path).isFile()
