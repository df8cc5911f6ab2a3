/** The messages between intent-race.test.ts and its worker processes, decoded on both ends. */
import { Schema } from "effect"

export const WorkerConfig = Schema.Struct({
  /** A SQLite file path or a PostgreSQL URL (test/races/location.ts). */
  location: Schema.String,
  worker: Schema.String,
  seed: Schema.Number,
  durationMs: Schema.Number,
  runs: Schema.Array(Schema.Struct({ runId: Schema.String, targetSessionId: Schema.String })),
  sessions: Schema.Array(Schema.String)
})
export type WorkerConfig = typeof WorkerConfig.Type

export const WorkerReport = Schema.Union(
  Schema.Struct({ type: Schema.Literal("ready"), worker: Schema.String, pid: Schema.Number }),
  /** A claim the store granted: it holds from `expiresAt - leaseMs` (the store's now) to `expiresAt`. */
  Schema.Struct({
    type: Schema.Literal("claimed"),
    worker: Schema.String,
    intentId: Schema.String,
    token: Schema.String,
    leaseMs: Schema.Number,
    expiresAt: Schema.Number
  }),
  /** The claim was given back before its lease ended: a later claim may overlap it. */
  Schema.Struct({
    type: Schema.Literal("released"),
    worker: Schema.String,
    intentId: Schema.String,
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
