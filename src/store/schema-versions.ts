/**
 * Schema versions, on both backends: the migrations a database has recorded in
 * `effect_sql_migrations` against those this package knows, and what an open does about them:
 *
 * - current: every known migration recorded, nothing else: an open runs no DDL at all;
 * - behind: some known migrations missing (a new database, or one of an earlier release): a
 *   writable open migrates it, a read-only open refuses it;
 * - newer: a migration this package does not know is recorded (a later release wrote the
 *   database): every open refuses it, changing nothing.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Effect, Option, Schema } from "effect"
import { StoreFailure } from "./store-errors.ts"

/** @effect/sql's default table; named here because the version checks read it directly. */
export const MIGRATIONS_TABLE = "effect_sql_migrations"

/** One recorded migration. */
export interface Version {
  readonly id: number
  readonly name: string
}

export type Comparison =
  | { readonly _tag: "Current" }
  | { readonly _tag: "Behind"; readonly missing: ReadonlyArray<Version> }
  | { readonly _tag: "Newer"; readonly unknown: ReadonlyArray<Version> }

/** A `fromRecord` key (`<id>_<name>`) as a version; keys of another shape are not migrations. */
const parseKey = (key: string): Option.Option<Version> => {
  const match = /^(\d+)_(.+)$/.exec(key)
  return match?.[1] === undefined || match[2] === undefined
    ? Option.none()
    : Option.some({ id: Number(match[1]), name: match[2] })
}

/** The versions a migrations record defines, in order. */
export const knownVersions = (migrations: Record<string, unknown>): ReadonlyArray<Version> =>
  Object.keys(migrations)
    .flatMap((key) => Option.toArray(parseKey(key)))
    .sort((a, b) => a.id - b.id)

/** Pure: what the recorded versions mean for a package that knows `known`. */
export const compareVersions = (
  known: ReadonlyArray<Version>,
  recorded: ReadonlyArray<Version>
): Comparison => {
  const knownIds = new Set(known.map((v) => v.id))
  const recordedIds = new Set(recorded.map((v) => v.id))
  const unknown = recorded.filter((v) => !knownIds.has(v.id))
  if (unknown.length > 0) return { _tag: "Newer", unknown }
  const missing = known.filter((v) => !recordedIds.has(v.id))
  return missing.length > 0 ? { _tag: "Behind", missing } : { _tag: "Current" }
}

const describe = (versions: ReadonlyArray<Version>) => versions.map((v) => `${v.id}_${v.name}`).join(", ")

/** The latest version a package knows (0: none). */
export const latestVersion = (known: ReadonlyArray<Version>) =>
  known.reduce((max, v) => Math.max(max, v.id), 0)

/** A database written by a later release: refused, whatever the open's mode. */
export const newerSchema = (shown: string, known: ReadonlyArray<Version>, unknown: ReadonlyArray<Version>) =>
  new StoreFailure({
    operation: "open",
    message:
      `${shown} was written by a newer release of pi-workflow-turns: it records schema migration(s) ` +
      `${describe(unknown)}, unknown to this release (which knows up to version ${latestVersion(known)}). ` +
      "Upgrade pi-workflow-turns; nothing was changed."
  })

/** A read-only open of a database that a writable open has not yet migrated. */
export const olderSchema = (shown: string, missing: ReadonlyArray<Version>) =>
  new StoreFailure({
    operation: "open",
    message:
      `${shown} is at an older schema version (missing migration(s) ${describe(missing)}); a read-only ` +
      "open does not migrate. Start Pi (or any writable open) on it once to upgrade it."
  })

const VersionRows = Schema.Array(Schema.Struct({ id: Schema.Number, name: Schema.String }))

/**
 * The versions recorded in the database (none without a migrations table). Reads only, so it
 * takes no write lock: the fast path of every open.
 */
export const recordedVersions: Effect.Effect<
  ReadonlyArray<Version>,
  SqlError.SqlError | StoreFailure,
  SqlClient.SqlClient
> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const exists = yield* sql.onDialectOrElse({
    // to_regclass follows the connection's search_path, as the stores' statements do.
    pg: () =>
      Effect.map(
        sql<{ found: string | null }>`SELECT to_regclass(${MIGRATIONS_TABLE})::text AS found`,
        (rows) => (rows[0]?.found ?? null) !== null
      ),
    orElse: () =>
      Effect.map(
        sql<{
          name: string
        }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${MIGRATIONS_TABLE}`,
        (rows) => rows.length > 0
      )
  })
  if (!exists) return []
  const rows = yield* sql`SELECT migration_id AS id, name FROM ${sql(MIGRATIONS_TABLE)} ORDER BY migration_id`
  return yield* Schema.decodeUnknown(VersionRows)(rows).pipe(
    Effect.mapError(
      (error) =>
        new StoreFailure({
          operation: "open",
          message: `unreadable ${MIGRATIONS_TABLE} table: ${error.message}`,
          cause: error
        })
    )
  )
})

/**
 * Run the migrations with @effect/sql's Migrator. A failing migration is a defect there (it
 * rolls the transaction back); here it is the open's typed failure.
 */
export const runMigrator = (
  migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>
): Effect.Effect<
  ReadonlyArray<readonly [number, string]>,
  StoreFailure | SqlError.SqlError,
  SqlClient.SqlClient
> =>
  Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: MIGRATIONS_TABLE }).pipe(
    Effect.catchTag("MigrationError", (error) => Effect.fail(migrationFailed(error))),
    Effect.catchSomeDefect((defect) =>
      defect instanceof Migrator.MigrationError
        ? Option.some(Effect.fail(migrationFailed(defect)))
        : Option.none()
    )
  )

const migrationFailed = (error: Migrator.MigrationError) =>
  new StoreFailure({
    operation: "open",
    message: `schema migration failed (nothing was changed): ${error.message}${
      error.cause === undefined ? "" : `: ${String(error.cause)}`
    }`,
    cause: error
  })
