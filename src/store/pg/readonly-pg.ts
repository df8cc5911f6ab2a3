/**
 * Opening a PostgreSQL controller database for reading only (the operator CLI): every
 * transaction on the pool's connections is read-only (`default_transaction_read_only`, set at
 * connection start through the URL's `options`), nothing is created or migrated, and the
 * database must be at exactly this release's schema version (`../schema-versions.ts`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { IncompatibleStore, StoreFailure } from "../store-errors.ts"
import { storeFailure } from "../store-errors.ts"
import { CONTROLLER_SCHEMA } from "../schema.ts"
import { compareVersions, newerSchema, olderSchema, recordedVersions } from "../schema-versions.ts"
import { withConnectionOption } from "./pg-timeouts.ts"
import { KNOWN_PG } from "./schema-pg.ts"

/** `url` with `-c default_transaction_read_only=on` added to its connection `options`. */
export const readOnlyUrl = (url: string): string =>
  withConnectionOption(url, "-c default_transaction_read_only=on")

/** The database must be a controller database of this schema version (nothing is created). */
export const checkSchema = (sql: SqlClient.SqlClient, shown: string) =>
  Effect.gen(function* () {
    // to_regclass follows the connection's search_path, as the stores' statements do.
    const tables = yield* sql<{
      found: string | null
    }>`SELECT to_regclass('pi_workflows_metadata')::text AS found`
    if ((tables[0]?.found ?? null) === null) {
      return yield* new StoreFailure({
        operation: "open",
        message: `${shown} is not a pi-workflow-turns database (it has no pi_workflows_metadata table)`
      })
    }
    const rows = yield* sql<{ value: string }>`SELECT value FROM pi_workflows_metadata WHERE key = 'schema'`
    const found = rows[0]?.value ?? "(none)"
    if (found !== CONTROLLER_SCHEMA) return yield* new IncompatibleStore({ databasePath: shown, found })
    const versions = compareVersions(KNOWN_PG, yield* recordedVersions)
    if (versions._tag === "Newer") return yield* newerSchema(shown, KNOWN_PG, versions.unknown)
    if (versions._tag === "Behind") return yield* olderSchema(shown, versions.missing)
  }).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.catchTag("SqlError", (error) => Effect.fail(storeFailure("open")(error)))
  )
