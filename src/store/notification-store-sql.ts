/**
 * NotificationStore on the controller SQLite database. Each operation is one statement, so it
 * needs no explicit transaction; callers that must write a notification together with another
 * change (a run's end and its `final`) wrap both in `Database.immediate`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Either, Layer, Option, type ParseResult, Schema } from "effect"
import { InvalidInput } from "../domain/errors.ts"
import { Database, type DatabaseOptions, lockWaitInContext, type OpenError, traced } from "./database.ts"
import { asStoreFailure } from "./store-errors.ts"
import {
  type Notification,
  NotificationPayload,
  NotificationStore,
  type NotificationStoreService
} from "./notification-store.ts"

const MAX_LIMIT = 1_000
const MAX_ID = 512

const Row = Schema.Struct({
  notification_id: Schema.String,
  run_id: Schema.String,
  target_session_id: Schema.String,
  kind: Schema.Literal("progress", "final"),
  payload_json: Schema.parseJson(NotificationPayload),
  created_at: Schema.String,
  delivered_at: Schema.NullOr(Schema.String)
})
const decodeRow = Schema.decodeUnknownEither(Row, { onExcessProperty: "error" })
const decodeTakenRow = Schema.decodeUnknownEither(Schema.extend(Row, Schema.Struct({ seq: Schema.Number })), {
  onExcessProperty: "error"
})

/**
 * Rows that do not decode (an alpha-era payload, a row some other tool wrote) are left out with
 * a warning instead of failing the whole read: one bad row must not hide every other notification.
 */
const decodeEach = <A>(
  operation: string,
  rows: ReadonlyArray<unknown>,
  decode: (row: unknown) => Either.Either<A, ParseResult.ParseError>
): Effect.Effect<ReadonlyArray<A>> =>
  Effect.gen(function* () {
    const out: Array<A> = []
    for (const row of rows) {
      const result = decode(row)
      if (Either.isRight(result)) out.push(result.right)
      else
        yield* Effect.logWarning(
          `${operation}: skipped a notification row that does not decode: ${result.left.message}`
        )
    }
    return out
  })

const toNotification = (row: typeof Row.Type): Notification => ({
  notificationId: row.notification_id,
  runId: row.run_id,
  targetSessionId: row.target_session_id,
  kind: row.kind,
  payload: row.payload_json,
  createdAt: row.created_at,
  deliveredAt: row.delivered_at
})

const iso = (millis: number) => new Date(millis).toISOString()

const badId = (field: string, value: string): InvalidInput | null =>
  value.length >= 1 && value.length <= MAX_ID
    ? null
    : new InvalidInput({ field, message: `${field} must be 1-${MAX_ID} characters` })

const badLimit = (limit: number): InvalidInput | null =>
  Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIMIT
    ? null
    : new InvalidInput({ field: "limit", message: `limit must be an integer from 1 to ${MAX_LIMIT}` })

const firstProblem = (...problems: ReadonlyArray<InvalidInput | null>) =>
  problems.find((p): p is InvalidInput => p !== null)

const COLUMNS = "notification_id, run_id, target_session_id, kind, payload_json, created_at, delivered_at"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Writes wait for another connection's lock when the Database in context offers it.
  const lockWait = yield* lockWaitInContext

  const decoded = (operation: string) => (rows: ReadonlyArray<unknown>) =>
    Effect.map(decodeEach(operation, rows, decodeRow), (found) => found.map(toNotification))

  const insert: NotificationStoreService["insert"] = (input) =>
    Effect.gen(function* () {
      const problem = firstProblem(
        badId("notificationId", input.notificationId),
        badId("runId", input.runId),
        badId("targetSessionId", input.targetSessionId)
      )
      if (problem !== undefined) return yield* problem
      const payload = yield* Schema.encode(Schema.parseJson(NotificationPayload))(input.payload).pipe(
        Effect.mapError((error) => new InvalidInput({ field: "payload", message: error.message }))
      )
      const now = iso(yield* Clock.currentTimeMillis)
      const rows = yield* lockWait(sql`INSERT INTO workflow_notifications (${sql.literal(COLUMNS)})
          VALUES (${input.notificationId}, ${input.runId}, ${input.targetSessionId}, ${input.payload.kind},
            ${payload}, ${now}, NULL)
          ON CONFLICT (notification_id) DO NOTHING
          RETURNING notification_id`).pipe(asStoreFailure("insertNotification"))
      return rows.length > 0
    })

  const latest: NotificationStoreService["latest"] = (runId, kind) =>
    sql`SELECT ${sql.literal(COLUMNS)} FROM workflow_notifications
        WHERE run_id = ${runId} AND kind = ${kind}
        ORDER BY created_at DESC, rowid DESC LIMIT 1`.pipe(
      asStoreFailure("latestNotification"),
      Effect.flatMap(decoded("latestNotification")),
      Effect.map((found) => Option.fromNullable(found[0]))
    )

  const takePending: NotificationStoreService["takePending"] = (input) =>
    Effect.gen(function* () {
      const problem = firstProblem(badId("targetSessionId", input.targetSessionId), badLimit(input.limit))
      if (problem !== undefined) return yield* problem
      const now = iso(yield* Clock.currentTimeMillis)
      // One statement marks them all, so two deliverers can never take the same row.
      const rows = yield* lockWait(sql`UPDATE workflow_notifications SET delivered_at = ${now}
          WHERE rowid IN (SELECT rowid FROM workflow_notifications
            WHERE target_session_id = ${input.targetSessionId} AND delivered_at IS NULL
            ORDER BY created_at, rowid LIMIT ${input.limit})
          RETURNING rowid AS seq, ${sql.literal(COLUMNS)}`).pipe(asStoreFailure("takePending"))
      const found = yield* decodeEach("takePending", rows, decodeTakenRow)
      // RETURNING has no defined order: restore creation order (rowid breaks ties).
      return [...found]
        .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.seq - b.seq))
        .map(toNotification)
    })

  const list: NotificationStoreService["list"] = (input) =>
    Effect.gen(function* () {
      const problem = firstProblem(
        badLimit(input.limit),
        input.runId === undefined ? null : badId("runId", input.runId),
        input.targetSessionId === undefined ? null : badId("targetSessionId", input.targetSessionId)
      )
      if (problem !== undefined) return yield* problem
      const state = input.state ?? "all"
      if (state !== "all" && state !== "pending" && state !== "delivered") {
        return yield* new InvalidInput({ field: "state", message: "state must be pending, delivered or all" })
      }
      const where = [
        input.runId === undefined ? sql`1 = 1` : sql`run_id = ${input.runId}`,
        input.targetSessionId === undefined ? sql`1 = 1` : sql`target_session_id = ${input.targetSessionId}`,
        state === "pending"
          ? sql`delivered_at IS NULL`
          : state === "delivered"
            ? sql`delivered_at IS NOT NULL`
            : sql`1 = 1`
      ]
      return yield* sql`SELECT ${sql.literal(COLUMNS)} FROM workflow_notifications
          WHERE ${sql.and(where)} ORDER BY created_at, rowid LIMIT ${input.limit}`.pipe(
        asStoreFailure("listNotifications"),
        Effect.flatMap(decoded("listNotifications"))
      )
    })

  return NotificationStore.of({
    insert: traced("NotificationStore.insert", insert),
    latest: traced("NotificationStore.latest", latest),
    takePending: traced("NotificationStore.takePending", takePending),
    list: traced("NotificationStore.list", list)
  })
})

export const layer: Layer.Layer<NotificationStore, never, SqlClient.SqlClient> = Layer.effect(
  NotificationStore,
  make
)

/** The store plus its database, for tests and standalone use. */
export const layerSqlite = (
  options: DatabaseOptions
): Layer.Layer<NotificationStore | Database | SqlClient.SqlClient, OpenError> =>
  layer.pipe(Layer.provideMerge(Database.layer(options)))
