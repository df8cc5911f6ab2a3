/**
 * One of several processes opening the same fresh controller database at once (spawned through
 * test/races/open-race.ts, never run by vitest). The argument is the location, which names the
 * backend: a SQLite file path, or a PostgreSQL URL (opened through the real PG layer, advisory
 * lock and all). Reports `ready`, waits for `go` on stdin, opens the database, then reports
 * which migrations this process ran (the Migrator's own "Running migration" log lines) or the
 * open's failure.
 */
import { Effect, HashMap, Layer, Logger, LogLevel, Option } from "effect"
import { Database } from "../../src/store/database.ts"
import * as DatabasePg from "../../src/store/pg/database-pg.ts"
import { reportLine, waitForGo } from "./kit.ts"
import { isPgLocation } from "./location.ts"

const location = process.argv[2] ?? ""
const applied: Array<number> = []

// A generous lock budget: the race is about who migrates, not about waiting for it.
const busyTimeoutMs = 20_000
const databaseLayer = isPgLocation(location)
  ? DatabasePg.layer({ url: location, busyTimeoutMs })
  : Database.layer({ filename: location, busyTimeoutMs })

const text = (message: unknown): string =>
  Array.isArray(message) ? message.map(String).join(" ") : String(message)

// Records the Migrator's per-migration debug line; everything else is dropped.
const migrationLog = Logger.make(({ message, annotations }) => {
  const id = HashMap.get(annotations, "migration_id")
  if (text(message) === "Running migration" && Option.isSome(id)) applied.push(Number(id.value))
})

const program = Effect.gen(function* () {
  yield* reportLine({ type: "ready" })
  yield* waitForGo
  const opened = yield* Effect.either(Effect.scoped(Layer.build(databaseLayer)))
  if (opened._tag === "Left") {
    yield* reportLine({ type: "failed", tag: opened.left._tag, message: opened.left.message })
  } else {
    yield* reportLine({ type: "opened", applied })
  }
})

Effect.runPromise(
  program.pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, migrationLog)),
    Logger.withMinimumLogLevel(LogLevel.Debug)
  )
).catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`)
  process.exitCode = 1
})
