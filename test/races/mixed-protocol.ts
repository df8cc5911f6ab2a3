/** Messages between mixed-race.test.ts and its worker processes, decoded on both ends. */
import { Schema } from "effect"

export const WorkerConfig = Schema.Struct({
  /** A SQLite file path or a PostgreSQL URL (test/races/location.ts). */
  location: Schema.String,
  worker: Schema.String,
  seed: Schema.Number,
  durationMs: Schema.Number,
  /** Steps a run needs before its owner may end it `completed`. */
  stepsToFinish: Schema.Number,
  runIds: Schema.Array(Schema.String),
  intentRuns: Schema.Array(Schema.Struct({ runId: Schema.String, targetSessionId: Schema.String })),
  sessions: Schema.Array(Schema.String)
})
export type WorkerConfig = typeof WorkerConfig.Type

export const WorkerReport = Schema.Union(
  Schema.Struct({ type: Schema.Literal("ready"), worker: Schema.String }),
  /** A fenced run write (a step start) that the store accepted. */
  Schema.Struct({
    type: Schema.Literal("wrote"),
    worker: Schema.String,
    runId: Schema.String,
    attemptId: Schema.String
  }),
  /** The owner ended the run `completed`. */
  Schema.Struct({
    type: Schema.Literal("ended"),
    worker: Schema.String,
    runId: Schema.String,
    token: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("resolved"),
    worker: Schema.String,
    intentId: Schema.String,
    messageId: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("error"),
    worker: Schema.String,
    tag: Schema.String,
    message: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("done"),
    worker: Schema.String,
    stats: Schema.Record({ key: Schema.String, value: Schema.Number })
  })
)
export type WorkerReport = typeof WorkerReport.Type

export const decodeConfig = Schema.decodeUnknownSync(Schema.parseJson(WorkerConfig))
export const decodeReport = Schema.decodeUnknownSync(Schema.parseJson(WorkerReport))
