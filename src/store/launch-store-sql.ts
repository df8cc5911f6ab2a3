/**
 * LaunchStore on the controller database (SQLite, or PostgreSQL through the same SqlClient;
 * `workflow_run_launches`, DDL in `schema.ts`). `reserve` runs in one BEGIN IMMEDIATE transaction; the caller's run
 * creation joins it as a savepoint, so the run and its launch row commit together or not at all.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import { Clock, Effect, Either, Layer, Option, type ParseResult, Schema } from "effect"
import { asStoreFailure, StoreFailure, storeFailure } from "./store-errors.ts"
import {
  decodeLaunch,
  encodeLaunch,
  LAUNCH_SCHEMA,
  LaunchAlreadyReserved,
  type LaunchRecord,
  LaunchStore,
  type LaunchStoreService,
  type Reserved,
  type ReserveLaunch,
  RestartRefused
} from "./launch-store.ts"
import { Database, traced } from "./database.ts"

const Row = Schema.Struct({
  run_id: Schema.String,
  kind: Schema.Literal("restart", "monitor", "start"),
  parent_run_id: Schema.NullOr(Schema.String),
  terminal_run_id: Schema.NullOr(Schema.String),
  terminal_intent_id: Schema.NullOr(Schema.String),
  tool_call_id: Schema.NullOr(Schema.String),
  launch_json: Schema.String,
  created_at: Schema.String
})
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

const toRecord = (row: typeof Row.Type): Either.Either<LaunchRecord, string> =>
  Either.map(decodeLaunch(row.launch_json), (launch) => ({
    runId: row.run_id,
    kind: row.kind,
    parentRunId: row.parent_run_id,
    terminalRunId: row.terminal_run_id,
    terminalIntentId: row.terminal_intent_id,
    toolCallId: row.tool_call_id,
    launch,
    createdAt: row.created_at
  }))

type Infra = SqlError.SqlError | ParseResult.ParseError

/** The body's own failure, kept apart from the transaction's SqlError until the rollback is done. */
class Inner<E> {
  readonly error: E
  constructor(error: E) {
    this.error = error
  }
}

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const db = yield* Database

  const existing = (found: LaunchRecord): Reserved => ({
    _tag: "Existing",
    runId: found.runId,
    kind: found.kind
  })

  const one = (operation: string, rows: Effect.Effect<ReadonlyArray<unknown>, Infra>) =>
    rows.pipe(
      Effect.flatMap(decodeRows),
      asStoreFailure(operation),
      Effect.flatMap((decoded) => {
        const row = decoded[0]
        if (row === undefined) return Effect.succeed(Option.none<LaunchRecord>())
        return Either.match(toRecord(row), {
          onLeft: (message) =>
            Effect.fail(
              new StoreFailure({ operation, message: `stored launch data is invalid: ${message}` })
            ),
          onRight: (record) => Effect.succeed(Option.some(record))
        })
      })
    )

  const get: LaunchStoreService["get"] = (runId) =>
    one("launch.get", sql`SELECT * FROM workflow_run_launches WHERE run_id = ${runId}`)
  const childOf: LaunchStoreService["childOf"] = (parentRunId) =>
    one("launch.childOf", sql`SELECT * FROM workflow_run_launches WHERE parent_run_id = ${parentRunId}`)
  const byTerminal: LaunchStoreService["byTerminal"] = (terminalRunId) =>
    one(
      "launch.byTerminal",
      sql`SELECT * FROM workflow_run_launches WHERE terminal_run_id = ${terminalRunId}`
    )

  const reserve = <E, R>(
    input: ReserveLaunch,
    create: Effect.Effect<{ readonly runId: string }, E, R>
  ): Effect.Effect<Reserved, E | LaunchAlreadyReserved | RestartRefused | StoreFailure, R> =>
    db
      .immediate(
        Effect.gen(function* () {
          const sameCall = (found: LaunchRecord) =>
            input.toolCallId !== null && found.toolCallId === input.toolCallId
          if (input.terminal !== null) {
            const found = yield* byTerminal(input.terminal.runId)
            if (Option.isSome(found)) {
              if (sameCall(found.value)) return existing(found.value)
              return yield* new LaunchAlreadyReserved({
                terminalRunId: input.terminal.runId,
                runId: found.value.runId,
                kind: found.value.kind
              })
            }
          }
          const parentRunId = input.lineage?.parentRunId ?? null
          if (parentRunId !== null) {
            const found = yield* childOf(parentRunId)
            if (Option.isSome(found)) {
              if (sameCall(found.value)) return existing(found.value)
              return yield* new RestartRefused({
                runId: parentRunId,
                reason: "alreadyRestarted",
                detail: `it was already restarted as run ${found.value.runId}`
              })
            }
          }
          const run = yield* create
          const launch = encodeLaunch({ schema: LAUNCH_SCHEMA, kind: input.kind, lineage: input.lineage })
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          yield* sql`INSERT INTO workflow_run_launches (run_id, kind, parent_run_id, terminal_run_id,
              terminal_intent_id, tool_call_id, launch_json, created_at)
            VALUES (${run.runId}, ${input.kind}, ${parentRunId}, ${input.terminal?.runId ?? null},
              ${input.terminal?.intentId ?? null}, ${input.toolCallId}, ${launch}, ${now})`.pipe(
            asStoreFailure("launch.reserve")
          )
          const created: Reserved = { _tag: "Created", runId: run.runId }
          return created
        }).pipe(Effect.mapError((error) => new Inner(error)))
      )
      .pipe(
        Effect.catchAll((error) =>
          error instanceof Inner
            ? Effect.fail(error.error)
            : Effect.fail(storeFailure("launch.reserve")(error))
        ),
        Effect.withSpan("LaunchStore.reserve")
      )

  return LaunchStore.of({
    get: traced("LaunchStore.get", get),
    childOf: traced("LaunchStore.childOf", childOf),
    byTerminal: traced("LaunchStore.byTerminal", byTerminal),
    reserve
  })
})

/** The store over an already-provided Database + SqlClient (schema created by the Database). */
export const layer: Layer.Layer<LaunchStore, never, Database | SqlClient.SqlClient> = Layer.effect(
  LaunchStore,
  make
)
