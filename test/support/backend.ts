/**
 * Which store backend this test run exercises: the `sqlite` project (default) or the `postgres`
 * project (vitest.config.ts sets PWT_STORE_BACKEND). The same test files run on both; what a
 * store is opened on is a *location*: a SQLite file path, or a PostgreSQL URL.
 *
 * On PostgreSQL each test file gets its own database on the run's cluster, and each store a test
 * opens gets its own schema in it (via the URL's `search_path`), as fresh as a new SQLite file.
 */
import { randomBytes } from "node:crypto"
import BetterSqlite from "better-sqlite3"
import type * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Fiber, type Layer, Option, type Scope, TestClock } from "effect"
import pg from "pg"
import { inject } from "vitest"
import { Database, type DatabaseOptions, type OpenError } from "../../src/store/database.ts"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import type { PgDatabaseOptions } from "../../src/store/pg/database-pg.ts"
import { databaseUrl } from "./pg-cluster.ts"
import { tempDbPath } from "./temp-db.ts"

export type Backend = "sqlite" | "postgres"

export const backend: Backend = process.env.PWT_STORE_BACKEND === "postgres" ? "postgres" : "sqlite"

export const isPg = backend === "postgres"

export const isPgLocation = (location: string) => /^postgres(ql)?:\/\//.test(location)

const randomName = (prefix: string) => `${prefix}_${randomBytes(6).toString("hex")}`

/** Run one statement on `url` with a short-lived client. */
export const pgQuery = async (url: string, text: string, params: ReadonlyArray<unknown> = []) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text, [...params])).rows
  } finally {
    await client.end()
  }
}

/** A new, empty database on the run's cluster. */
const newDatabase = async (): Promise<string> => {
  const admin = inject("pgAdminUrl")
  const name = randomName("t")
  await pgQuery(admin, `CREATE DATABASE ${name}`)
  return databaseUrl(admin, name)
}

let fileDatabase: Promise<string> | undefined

/** This test file's database (created on first use). */
const fileDatabaseUrl = (): Promise<string> => {
  fileDatabase ??= newDatabase()
  return fileDatabase
}

/** A URL of a database of its own (default schema): for what must see a whole new database. */
export const freshPgDatabaseUrl: Effect.Effect<string> = Effect.promise(newDatabase)

/** A URL whose connections see only a fresh, empty schema of this file's database. */
export const freshPgUrl: Effect.Effect<string> = Effect.promise(async () => {
  const url = new URL(await fileDatabaseUrl())
  const schema = randomName("s")
  await pgQuery(url.toString(), `CREATE SCHEMA ${schema}`)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return url.toString()
})

/** A fresh store location for the current backend: a temp SQLite file, or a fresh PG schema. */
export const freshLocation: Effect.Effect<string, never, Scope.Scope> = isPg ? freshPgUrl : tempDbPath

/** The controller database (Database + SqlClient) at `location`: a SQLite file or a PostgreSQL URL. */
export const databaseLayerAt = (
  location: string,
  options: { readonly busyTimeoutMs?: number } = {}
): Layer.Layer<Database | SqlClient.SqlClient, OpenError> =>
  isPgLocation(location)
    ? DatabasePg.layer({ url: location, ...options })
    : Database.layer({ filename: location, ...options })

const wallClock = Clock.make()

/**
 * Read `probe` until `done` holds (at most `timeoutMs` of real time). On SQLite every store call
 * completes inside the calling fiber, so after a `TestClock.adjust` the woken fibers are done;
 * on PostgreSQL they may still await the server. Returns the last value read either way, so the
 * test's own assertion reports a miss.
 */
export const whenDone = <A, E, R>(
  probe: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  timeoutMs = 5_000
): Effect.Effect<A, E, R> => {
  const poll = (deadline: number): Effect.Effect<A, E, R> =>
    Effect.flatMap(probe, (value) =>
      done(value)
        ? Effect.succeed(value)
        : Effect.flatMap(Clock.currentTimeMillis, (now) =>
            now >= deadline
              ? Effect.succeed(value)
              : Effect.zipRight(Effect.sleep("5 millis"), poll(deadline))
          )
    )
  return Effect.flatMap(Clock.currentTimeMillis, (now) => poll(now + timeoutMs)).pipe(
    Effect.withClock(wallClock)
  )
}

/** Every row a raw query returns at `location`, on a connection of its own (decode before use). */
export const rawRowsAt = (location: string, text: string): Effect.Effect<ReadonlyArray<unknown>> =>
  isPgLocation(location)
    ? Effect.promise(() => pgQuery(location, text))
    : Effect.sync(() => {
        const db = new BetterSqlite(location, { readonly: true })
        try {
          return db.prepare(text).all()
        } finally {
          db.close()
        }
      })

/** `App.layer`'s `database` option for a location of either backend. */
export const appDatabase = (location: string): DatabaseOptions | PgDatabaseOptions =>
  isPgLocation(location) ? { url: location } : { filename: location }

/**
 * Join `fiber`, advancing the TestClock by `stepMs` while it is still running. A delivery that
 * waits (Clock.sleep) for a claim another fiber is about to release finishes within one store
 * round trip on SQLite (nothing is advanced then); on PostgreSQL that release is real I/O, and
 * a TestClock no one advances would leave the waiter asleep forever. Production clocks run.
 */
export const joinAdvancing = <A, E>(fiber: Fiber.Fiber<A, E>, stepMs = 10, maxSteps = 1_000) => {
  const loop = (step: number): Effect.Effect<A, E> =>
    Effect.flatMap(Fiber.poll(fiber), (polled) =>
      Option.isSome(polled) || step >= maxSteps
        ? Fiber.join(fiber)
        : Effect.zipRight(
            Effect.zipRight(
              TestClock.adjust(stepMs),
              Effect.sleep("2 millis").pipe(Effect.withClock(wallClock))
            ),
            loop(step + 1)
          )
    )
  return loop(0)
}
