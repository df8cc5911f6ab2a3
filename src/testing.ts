/**
 * Test helpers for users of this package and for our own tests: the scriptable fake Pi session,
 * a turn-intent store on a temporary SQLite file, and fault injection for the store
 * (`StoreFaults`: SQLITE_BUSY, read-only, thrown errors, hangs). Nothing here is used at runtime.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import type { Database, OpenError } from "./store/database.ts"
import type { TurnIntentStore } from "./store/turn-intent-store.ts"
import { layerSqlite } from "./store/turn-intent-store-sql.ts"

export {
  type FakeOptions,
  layerFake,
  makeFake,
  type Notification,
  PiSessionFake,
  type PiSessionFakeControl,
  type SentRecord,
  type TurnPhase
} from "./session/pi-session-fake.ts"

export * as StoreFaults from "./testing/store-faults.ts"

/** A scoped temporary directory, removed with everything in it when the scope closes. */
export const tempDirectory = (prefix = "pi-workflow-turns-") =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A TurnIntentStore (and its Database) on a fresh file in a temp directory owned by the layer. */
export const layerTempStore = (
  prefix?: string
): Layer.Layer<TurnIntentStore | Database | SqlClient.SqlClient, OpenError> =>
  Layer.unwrapScoped(
    Effect.map(tempDirectory(prefix), (dir) => layerSqlite({ filename: join(dir, "controller.db") }))
  )
