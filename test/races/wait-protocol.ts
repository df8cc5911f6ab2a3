/** The messages between wait-race.test.ts and its worker processes, decoded on both ends. */
import { Schema } from "effect"

export const WaitWorkerConfig = Schema.Struct({
  /** A SQLite file path or a PostgreSQL URL (test/races/location.ts). */
  location: Schema.String,
  worker: Schema.String,
  seed: Schema.Number,
  /** The requests to answer, each with its run's owning session. */
  waits: Schema.Array(Schema.Struct({ requestId: Schema.String, sessionId: Schema.String })),
  /** Also time waits out (`expireWait`), as a deadline watcher would, instead of answering some. */
  expires: Schema.Boolean
})
export type WaitWorkerConfig = typeof WaitWorkerConfig.Type

export const WaitWorkerReport = Schema.Union(
  Schema.Struct({ type: Schema.Literal("ready"), worker: Schema.String, pid: Schema.Number }),
  /** This worker's answer (or expiry) is the one the store kept. */
  Schema.Struct({
    type: Schema.Literal("won"),
    worker: Schema.String,
    requestId: Schema.String,
    how: Schema.Literal("answer", "expire"),
    answer: Schema.String
  }),
  /** Refused: the request was no longer open (`answered`/`closed`), or not won (expiry). */
  Schema.Struct({
    type: Schema.Literal("lost"),
    worker: Schema.String,
    requestId: Schema.String,
    reason: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("error"),
    worker: Schema.String,
    tag: Schema.String,
    message: Schema.String
  }),
  Schema.Struct({ type: Schema.Literal("done"), worker: Schema.String })
)
export type WaitWorkerReport = typeof WaitWorkerReport.Type

export const decodeWaitConfig = Schema.decodeUnknownSync(Schema.parseJson(WaitWorkerConfig))
export const decodeWaitReport = Schema.decodeUnknownSync(Schema.parseJson(WaitWorkerReport))
