/**
 * Child-process probe: prints the intent and source-event IDs this process derives for the keys
 * given as JSON on argv, one JSON line each, so a test can compare them across processes.
 */
import { Effect, Schema } from "effect"
import { intentId, sourceEventId } from "../../src/domain/identity.ts"
import { Cause } from "../../src/domain/turn-intent.ts"

const Id = Schema.NullOr(Schema.String)
const Input = Schema.Struct({
  intents: Schema.Array(
    Schema.Struct({
      targetSessionId: Schema.String,
      runId: Schema.String,
      sourceEventId: Schema.String,
      nodeId: Id,
      attemptId: Id,
      cause: Cause
    })
  ),
  events: Schema.Array(
    Schema.Struct({
      runId: Schema.String,
      nodeId: Id,
      attemptId: Id,
      cause: Cause,
      interruption: Schema.Number
    })
  )
})

const input = Schema.decodeUnknownSync(Schema.parseJson(Input))(process.argv[2] ?? "")
const program = Effect.gen(function* () {
  const intents = yield* Effect.forEach(input.intents, intentId)
  const events = yield* Effect.forEach(input.events, sourceEventId)
  process.stdout.write(`${JSON.stringify({ pid: process.pid, intents, events })}\n`)
})
Effect.runSync(program)
