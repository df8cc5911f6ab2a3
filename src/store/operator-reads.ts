/**
 * What the operator tools read besides the stores. First, whether they can read a database
 * that opened read-only: the open checks the schema marker and version, but lets one older
 * file through on purpose (an unversioned file with pending legacy `launch_failure` rows, so
 * that `doctor` can name the reset) and cannot see a table that is missing; `readShape` reads
 * the structure (which controller tables exist, the legacy rows, the recorded versions) and
 * `readability` decides from those facts, before any store reads a table. Second, IDs by
 * prefix for the CLI's short IDs: one bounded query per table, the same on both backends; it
 * scans the table (no index serves a prefix of a digest) and returns at most `limit` IDs.
 * Third, the step reminders sent per attempt (`remindersSent`), for the run conditions shown.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { legacyLaunchFailures } from "./database.ts"
import { migrations } from "./schema.ts"
import { compareVersions, knownVersions, recordedVersions } from "./schema-versions.ts"
import { asStoreFailure, LegacyLaunchNotifications, type StoreFailure, storeFailure } from "./store-errors.ts"

/** Every table of `pi-workflows.controller-store.v1`, on both backends (a fresh store has exactly these). */
export const CONTROLLER_TABLES = [
  "pi_workflows_metadata",
  "workflow_notifications",
  "workflow_turn_intents",
  "workflow_runs",
  "workflow_steps",
  "workflow_requests",
  "workflow_run_events",
  "workflow_run_launches",
  "workflow_run_snapshots",
  "workflow_step_reminders",
  "workflow_waits"
] as const

/** Tables a later schema version creates: a file behind it lacks them and is not damaged. */
const LATER_TABLES: ReadonlySet<string> = new Set([
  "workflow_run_snapshots",
  "workflow_step_reminders",
  "workflow_waits"
])

/** What the database holds, as facts. */
export interface StoreShape {
  /** Controller tables the database lacks, in `CONTROLLER_TABLES` order. */
  readonly missingTables: ReadonlyArray<string>
  /** Undelivered `launch_failure` rows of the alpha notifications table (0 without one). */
  readonly legacyPending: number
  /** Some of this release's schema versions are not recorded (SQLite; PostgreSQL refuses that at open). */
  readonly behind: boolean
}

export type Readability =
  | { readonly _tag: "Readable" }
  | { readonly _tag: "LegacyLaunchFailures"; readonly pending: number }
  | { readonly _tag: "MissingTables"; readonly missing: ReadonlyArray<string> }

/**
 * Pure: can the stores be read as they are? Pending legacy rows in a file Pi would refuse (not
 * yet upgraded, or incomplete) call for the reset; a file that records the versions but lacks a
 * table is damaged, and Pi cannot use it either. A complete file at this version is read even
 * with legacy rows: `doctor` reports them among its findings.
 */
export const readability = (shape: StoreShape): Readability => {
  if (shape.legacyPending > 0 && (shape.behind || shape.missingTables.length > 0)) {
    return { _tag: "LegacyLaunchFailures", pending: shape.legacyPending }
  }
  return shape.missingTables.length > 0
    ? { _tag: "MissingTables", missing: shape.missingTables }
    : { _tag: "Readable" }
}

const KNOWN_SQLITE = knownVersions(migrations)

const existingTables = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({
    // to_regclass follows the connection's search_path, as the stores' statements do.
    pg: () =>
      Effect.map(
        Effect.forEach(CONTROLLER_TABLES, (name) =>
          Effect.map(sql<{ found: string | null }>`SELECT to_regclass(${name})::text AS found`, (rows) =>
            (rows[0]?.found ?? null) === null ? [] : [name]
          )
        ),
        (found) => new Set<string>(found.flat())
      ),
    orElse: () =>
      Effect.map(
        sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`,
        (rows) => new Set(rows.map((row) => row.name))
      )
  })

/** Read the shape (reads only: no lock, no DDL). */
export const readShape: Effect.Effect<StoreShape, StoreFailure, SqlClient.SqlClient> = Effect.gen(
  function* () {
    const sql = yield* SqlClient.SqlClient
    const present = yield* existingTables(sql)
    const behind = yield* sql.onDialectOrElse({
      pg: () => Effect.succeed(false),
      orElse: () =>
        Effect.map(recordedVersions, (recorded) => compareVersions(KNOWN_SQLITE, recorded)._tag === "Behind")
    })
    return {
      missingTables: CONTROLLER_TABLES.filter(
        (name) => !present.has(name) && !(behind && LATER_TABLES.has(name))
      ),
      legacyPending: yield* legacyLaunchFailures,
      behind
    }
  }
).pipe(
  Effect.catchTag("SqlError", (error) => Effect.fail(storeFailure("open")(error))),
  Effect.withSpan("store.readShape")
)

const resetSqlite = (path: string) =>
  `To reset the controller store: stop Pi, move ${path} (and its -wal and -shm files, if present) ` +
  "aside, then start Pi again; a fresh store is created on open."

const resetPg =
  "To reset the controller store: stop Pi, drop its tables (docs/postgres.md, Operations) or point " +
  "PI_WORKFLOWS_DB at an empty database, then start Pi again."

/**
 * A database the operator tools will not read, with what to do about it. Nothing was changed:
 * the refusal comes from reading the structure only.
 */
export class StoreRefused extends Schema.TaggedError<StoreRefused>()("StoreRefused", {
  databasePath: Schema.String,
  postgres: Schema.Boolean,
  reason: Schema.Literal("legacyLaunchFailures", "missingTables", "notADatabase"),
  /** Pending legacy rows (`legacyLaunchFailures`). */
  pending: Schema.Number,
  /** The controller tables it lacks (`missingTables`). */
  missing: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return refusalText(this)
  }
}

const refusalText = (refused: StoreRefused): string => {
  if (refused.reason === "legacyLaunchFailures") {
    // The store's own refusal carries the reset instruction (the rows exist only in SQLite files).
    return new LegacyLaunchNotifications({ databasePath: refused.databasePath, pending: refused.pending })
      .message
  }
  if (refused.reason === "notADatabase") {
    return (
      `${refused.databasePath} is not a pi-workflow-turns database (the file is not a database ` +
      "SQLite can open); pass --db PATH or set PI_WORKFLOWS_DB"
    )
  }
  const reset = refused.postgres ? resetPg : resetSqlite(refused.databasePath)
  return (
    `${refused.databasePath} is an incomplete pi-workflow-turns database: it lacks the table(s) ` +
    `${refused.missing.join(", ")}, so neither Pi nor this tool can use it. Nothing was changed. ${reset}`
  )
}

/** `readability` as the refusal the tools report (none when readable). */
export const refusal = (
  databasePath: string,
  postgres: boolean,
  verdict: Readability
): StoreRefused | undefined => {
  switch (verdict._tag) {
    case "Readable":
      return undefined
    case "LegacyLaunchFailures":
      return new StoreRefused({
        databasePath,
        postgres,
        reason: "legacyLaunchFailures",
        pending: verdict.pending,
        missing: []
      })
    case "MissingTables":
      return new StoreRefused({
        databasePath,
        postgres,
        reason: "missingTables",
        pending: 0,
        missing: verdict.missing
      })
  }
}

/** The SQLite result code (`SQLITE_NOTADB`, …) somewhere in an error's cause chain. */
const sqliteCode = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if ("code" in current && typeof current.code === "string" && current.code.startsWith("SQLITE_")) {
      return current.code
    }
    current = "cause" in current ? current.cause : undefined
  }
  return undefined
}

/** The open failed because the file is not an SQLite database at all (SQLITE_NOTADB). */
export const isNotADatabase = (error: StoreFailure): boolean => sqliteCode(error) === "SQLITE_NOTADB"

// --- IDs by prefix -----------------------------------------------------------------------------

const idsWithPrefix = (sql: SqlClient.SqlClient, table: "intents" | "runs", prefix: string, limit: number) =>
  (table === "intents"
    ? sql<{ readonly id: string }>`SELECT intent_id AS id FROM workflow_turn_intents
        WHERE substr(intent_id, 1, ${prefix.length}) = ${prefix} ORDER BY intent_id LIMIT ${limit}`
    : sql<{ readonly id: string }>`SELECT run_id AS id FROM workflow_runs
        WHERE substr(run_id, 1, ${prefix.length}) = ${prefix} ORDER BY run_id LIMIT ${limit}`
  ).pipe(
    Effect.map((rows) => rows.map((row) => String(row.id))),
    asStoreFailure("list")
  )

/** Pi session IDs (runs' and intents' target sessions) that start with `prefix`, at most `limit`. */
const sessionsWithPrefix = (sql: SqlClient.SqlClient, prefix: string, limit: number) =>
  sql<{ readonly id: string }>`SELECT id FROM (
      SELECT target_session_id AS id FROM workflow_runs WHERE substr(target_session_id, 1, ${prefix.length}) = ${prefix}
      UNION
      SELECT target_session_id AS id FROM workflow_turn_intents
        WHERE substr(target_session_id, 1, ${prefix.length}) = ${prefix}
    ) AS sessions ORDER BY id LIMIT ${limit}`.pipe(
    Effect.map((rows) => rows.map((row) => String(row.id))),
    asStoreFailure("list")
  )

/** The prefix lookup over the client in context. */
export const IdPrefixes = Effect.map(SqlClient.SqlClient, (sql) => ({
  idsWithPrefix: (table: "intents" | "runs", prefix: string, limit: number) =>
    idsWithPrefix(sql, table, prefix, limit),
  sessionsWithPrefix: (prefix: string, limit: number) => sessionsWithPrefix(sql, prefix, limit)
}))

// --- Step reminders ------------------------------------------------------------------------------

/**
 * Step reminders (ordinals 1–2 of `workflow_step_reminders`) sent per attempt, for the attempts
 * given (a listing's current attempts): one query, the same on both backends.
 */
export const remindersSent = (
  attemptIds: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, number>, StoreFailure, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const ids = [...new Set(attemptIds)]
    if (ids.length === 0) return Effect.succeed(new Map<string, number>())
    return sql<{ readonly attempt_id: string; readonly reminders: number | string }>`SELECT attempt_id,
        COUNT(*) AS reminders FROM workflow_step_reminders
        WHERE ordinal <= 2 AND ${sql.in("attempt_id", ids)} GROUP BY attempt_id`.pipe(
      Effect.map(
        (rows): ReadonlyMap<string, number> =>
          new Map(rows.map((row) => [String(row.attempt_id), Number(row.reminders)] as const))
      ),
      asStoreFailure("list")
    )
  })
