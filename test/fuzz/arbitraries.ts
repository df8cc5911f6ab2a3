/**
 * FastCheck arbitraries for the fuzz tests: valid values of each input type, and invalid ones
 * built by breaking exactly one rule of a valid value (so every rule is exercised, not just
 * "garbage in"), plus arbitrary JSON-like junk.
 */
import { FastCheck as fc } from "effect"
import {
  FACTS_SCHEMA,
  type FallbackFacts,
  MAX_FACTS_BYTES,
  MAX_REASON_LENGTH
} from "../../src/domain/facts.ts"
import { Cause } from "../../src/domain/turn-intent.ts"

/** Runs per property: enough to find the rule breakers, small enough for `npm test`. */
export const RUNS = Number(process.env.FUZZ_RUNS ?? 300)

const text = fc.string({ unit: "grapheme-composite", maxLength: 40 })
const nullableText = fc.option(text, { nil: null })

export const validFacts: fc.Arbitrary<FallbackFacts> = fc.record({
  schema: fc.constant(FACTS_SCHEMA),
  workflowName: text,
  runId: text,
  observedState: text,
  cause: text,
  nodeId: nullableText,
  attemptId: nullableText,
  reason: fc.option(fc.string({ maxLength: 300 }), { nil: null }),
  handoff: fc.boolean()
})

const FIELDS = [
  "schema",
  "workflowName",
  "runId",
  "observedState",
  "cause",
  "nodeId",
  "attemptId",
  "reason",
  "handoff"
] as const

/** A value of the wrong type for any facts field (null only where null is not allowed). */
const wrongValue = (field: (typeof FIELDS)[number]) => {
  const nullable = field === "nodeId" || field === "attemptId" || field === "reason"
  const others = fc.oneof(
    fc.integer(),
    // finite only: JSON writes NaN and ±Infinity as null, which a nullable field accepts
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constant(undefined),
    fc.array(fc.string(), { maxLength: 2 }),
    fc.object({ maxDepth: 1 })
  )
  const base = field === "handoff" ? fc.oneof(others, fc.string()) : fc.oneof(others, fc.boolean())
  return nullable ? base : fc.oneof(base, fc.constant(null))
}

/** Facts with exactly one rule broken; the label says which. */
export const invalidFacts: fc.Arbitrary<{ readonly rule: string; readonly value: unknown }> = fc.oneof(
  fc.tuple(validFacts, fc.constantFrom(...FIELDS)).map(([facts, field]) => {
    const { [field]: _, ...rest } = facts
    return { rule: `missing ${field}`, value: rest }
  }),
  fc.tuple(validFacts, fc.constantFrom(...FIELDS)).chain(([facts, field]) =>
    wrongValue(field).map((value) => ({
      rule: `wrong type for ${field}`,
      value: { ...facts, [field]: value }
    }))
  ),
  fc
    .tuple(
      validFacts,
      fc.string({ minLength: 1, maxLength: 20 }).filter((k) => !(FIELDS as ReadonlyArray<string>).includes(k))
    )
    .map(([facts, key]) => ({ rule: `unknown field ${key}`, value: { ...facts, [key]: 1 } })),
  fc
    .tuple(
      validFacts,
      fc.string({ minLength: 1, maxLength: 60 }).filter((s) => s !== FACTS_SCHEMA)
    )
    .map(([facts, schema]) => ({ rule: "wrong schema", value: { ...facts, schema } })),
  validFacts.map((facts) => ({
    rule: "reason too long",
    value: { ...facts, reason: "r".repeat(MAX_REASON_LENGTH + 1) }
  })),
  validFacts.map((facts) => ({
    rule: "facts too large",
    value: { ...facts, workflowName: "w".repeat(MAX_FACTS_BYTES) }
  })),
  fc
    .oneof(fc.anything(), fc.array(fc.anything(), { maxLength: 3 }))
    .filter((v) => typeof v !== "object" || v === null || Array.isArray(v))
    .map((value) => ({ rule: "not an object", value }))
)

/** Any string; most are valid IDs, the edges (empty, 512, 513 and far longer) are weighted in. */
export const anyId = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 64 }) },
  { weight: 1, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.integer({ min: 505, max: 520 }).map((n) => "i".repeat(n)) },
  { weight: 1, arbitrary: fc.string({ minLength: 513, maxLength: 2_000 }) }
)

export const invalidId = fc.oneof(
  fc.constant(""),
  fc.integer({ min: 513, max: 4_000 }).map((n) => "x".repeat(n))
)
export const validId = fc.string({ minLength: 1, maxLength: 512 })

export const cause = fc.constantFrom(...Cause.literals)

/** Numbers that are not non-negative safe integers. */
export const badOrdinal = fc.oneof(
  fc.integer({ max: -1 }),
  fc.double({ noNaN: false }).filter((n) => !Number.isSafeInteger(n)),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1, 0.5)
)
