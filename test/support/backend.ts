/**
 * Which store backend this test run exercises: the `sqlite` project (default) or the `postgres`
 * project (vitest.config.ts sets PWT_STORE_BACKEND). The same test files run on both; what a
 * store is opened on is a *location*: a SQLite file path, or a PostgreSQL URL.
 *
 * On PostgreSQL each test file gets its own database on the run's cluster, and each store a test
 * opens gets its own schema in it (via the URL's `search_path`), as fresh as a new SQLite file.
 */
import { randomBytes } from "node:crypto"
import { Effect, type Scope } from "effect"
import pg from "pg"
import { inject } from "vitest"
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

let fileDatabase: Promise<string> | undefined

/** This test file's database (created on first use). */
const fileDatabaseUrl = (): Promise<string> => {
  fileDatabase ??= (async () => {
    const admin = inject("pgAdminUrl")
    const name = randomName("t")
    await pgQuery(admin, `CREATE DATABASE ${name}`)
    return databaseUrl(admin, name)
  })()
  return fileDatabase
}

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
