/**
 * PROTOTYPE (bench only) of faster input checks for src/domain/facts.ts and identity.ts. Valid
 * input — the hot path — is checked with plain code and a non-strict Schema decode; anything that
 * fails falls back to the src function, so the typed error and its message stay exactly the same.
 */
import { createHash } from "node:crypto"
import { Effect, Schema } from "effect"
import type { InvalidFacts, InvalidInput } from "../../src/domain/errors.ts"
import { FallbackFacts, MAX_FACTS_BYTES, validateFacts } from "../../src/domain/facts.ts"
import { type IntentKey, intentId } from "../../src/domain/identity.ts"
import { LAUNCH_NODE, MAX_ID_LENGTH } from "../../src/domain/turn-intent.ts"

const FACT_KEYS: ReadonlySet<string> = new Set(Object.keys(FallbackFacts.from.fields))
const decodeFields = Schema.decodeUnknownEither(FallbackFacts.from)

/** Strict facts check (~1 µs instead of ~4.5 µs); also returns the JSON text to store. */
export const validateFactsFast = (
  input: unknown
): Effect.Effect<{ readonly facts: FallbackFacts; readonly json: string }, InvalidFacts> =>
  Effect.suspend(() => {
    if (
      typeof input === "object" &&
      input !== null &&
      Object.keys(input).every((key) => FACT_KEYS.has(key))
    ) {
      const decoded = decodeFields(input)
      if (decoded._tag === "Right") {
        const json = JSON.stringify(decoded.right)
        if (Buffer.byteLength(json, "utf8") <= MAX_FACTS_BYTES)
          return Effect.succeed({ facts: decoded.right, json })
      }
    }
    return Effect.map(validateFacts(input), (facts) => ({ facts, json: JSON.stringify(facts) }))
  })

const validId = (value: string | null) =>
  value === null || (value.length > 0 && value.length <= MAX_ID_LENGTH)

/** Same digest as src `intentId`; plain checks instead of five generator steps. */
export const intentIdFast = (key: IntentKey): Effect.Effect<string, InvalidInput> =>
  Effect.suspend(() =>
    validId(key.targetSessionId) &&
    validId(key.runId) &&
    validId(key.sourceEventId) &&
    validId(key.nodeId) &&
    validId(key.attemptId)
      ? Effect.succeed(
          `deferred-turn:${createHash("sha256")
            .update(
              JSON.stringify([
                key.targetSessionId,
                key.runId,
                key.sourceEventId,
                key.nodeId ?? LAUNCH_NODE,
                key.attemptId,
                key.cause
              ])
            )
            .digest("hex")}`
        )
      : intentId(key)
  )
