/**
 * Deterministic identities. The same inputs give the same ID in any process and across
 * restarts: a SHA-256 digest over a canonical JSON array of the inputs, so no separator
 * inside a value can make two different input lists collide.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { InvalidInput } from "./errors.ts"
import { type Cause, LAUNCH_NODE, MAX_ID_LENGTH } from "./turn-intent.ts"

const digest = (prefix: string, parts: ReadonlyArray<string | number | null>): string =>
  `${prefix}:${createHash("sha256").update(JSON.stringify(parts)).digest("hex")}`

/** Check one ID-like input: a non-empty string within the store's key limit. */
export const checkId = (field: string, value: string): Effect.Effect<string, InvalidInput> =>
  value.length === 0
    ? Effect.fail(new InvalidInput({ field, message: `${field} must be a non-empty string` }))
    : value.length > MAX_ID_LENGTH
      ? Effect.fail(
          new InvalidInput({ field, message: `${field} must be at most ${MAX_ID_LENGTH} characters` })
        )
      : Effect.succeed(value)

const checkOptionalId = (field: string, value: string | null) =>
  value === null ? Effect.succeed(null) : checkId(field, value)

/**
 * One workflow transition that needs a successor turn. `interruption` is the run's ordinal for
 * this interruption, so a later, distinct interruption in the same attempt gets its own event.
 */
export interface SourceEventKey {
  readonly runId: string
  readonly cause: Cause
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly interruption: number
}

export const sourceEventId = (key: SourceEventKey): Effect.Effect<string, InvalidInput> =>
  Effect.gen(function* () {
    yield* checkId("runId", key.runId)
    yield* checkOptionalId("nodeId", key.nodeId)
    yield* checkOptionalId("attemptId", key.attemptId)
    if (!Number.isSafeInteger(key.interruption) || key.interruption < 0) {
      return yield* new InvalidInput({
        field: "interruption",
        message: "interruption must be a non-negative integer"
      })
    }
    return digest("source-event", [
      key.runId,
      key.nodeId ?? LAUNCH_NODE,
      key.attemptId,
      key.cause,
      key.interruption
    ])
  })

export interface IntentKey {
  readonly targetSessionId: string
  readonly runId: string
  readonly sourceEventId: string
  readonly nodeId: string | null
  readonly attemptId: string | null
  readonly cause: Cause
}

/** `deferred-turn:<sha256>` over target session, run, source event, node or `$launch`, attempt, cause. */
export const intentId = (key: IntentKey): Effect.Effect<string, InvalidInput> =>
  Effect.gen(function* () {
    yield* checkId("targetSessionId", key.targetSessionId)
    yield* checkId("runId", key.runId)
    yield* checkId("sourceEventId", key.sourceEventId)
    yield* checkOptionalId("nodeId", key.nodeId)
    yield* checkOptionalId("attemptId", key.attemptId)
    return digest("deferred-turn", [
      key.targetSessionId,
      key.runId,
      key.sourceEventId,
      key.nodeId ?? LAUNCH_NODE,
      key.attemptId,
      key.cause
    ])
  })

/** Stable message identity for the one message that resolves an intent. */
export const resolutionMessageId = (turnIntentId: string, resolution: string): string =>
  digest("turn-message", [turnIntentId, resolution])
