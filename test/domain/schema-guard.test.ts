/**
 * The compiled guard must accept exactly what Schema accepts for the facts fields (stored facts
 * that pass it are returned without Schema's decoder), and refuse to compile what it does not know.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, FastCheck as fc, Schema } from "effect"
import { FallbackFacts, MAX_REASON_LENGTH, parseStoredFacts, compileGuard } from "../../src/domain/facts.ts"
import { sampleFacts } from "../support/fixtures.ts"

const Fields = FallbackFacts.from
const schemaIs = Schema.is(Fields)
const guard = compileGuard(Fields)

const FIELDS = Object.keys(Fields.fields)

/** A valid record with one field replaced (or removed) by an arbitrary value. */
const mutated = fc
  .tuple(
    Arbitrary.make(Fields),
    fc.constantFrom(...FIELDS),
    fc.oneof(
      fc.anything(),
      fc.constant(undefined),
      fc.constant(null),
      fc.string(),
      fc.constant("x".repeat(MAX_REASON_LENGTH + 1))
    ),
    fc.boolean()
  )
  .map(([facts, field, value, remove]) => {
    const copy: Record<string, unknown> = { ...facts }
    if (remove) delete copy[field]
    else copy[field] = value
    return copy
  })

describe("compileGuard", () => {
  it("compiles the facts fields", () => {
    expect(guard).toBeDefined()
  })

  it("agrees with Schema.is on valid, mutated and arbitrary values", () => {
    const check = (value: unknown): void => {
      expect(guard?.(value)).toBe(schemaIs(value))
    }
    fc.assert(fc.property(Arbitrary.make(Fields), check), { numRuns: 300 })
    fc.assert(fc.property(mutated, check), { numRuns: 2_000 })
    fc.assert(fc.property(fc.anything(), check), { numRuns: 300 })
    check({ ...sampleFacts(), reason: "x".repeat(MAX_REASON_LENGTH) })
    check({ ...sampleFacts(), reason: "x".repeat(MAX_REASON_LENGTH + 1) })
    check({ ...sampleFacts(), schema: "pi-workflows.deferred-turn-facts.v2" })
  })

  it("compiles nothing it does not know: the caller keeps Schema's decoder", () => {
    expect(compileGuard(Schema.Struct({ count: Schema.Number }))).toBeUndefined()
    expect(compileGuard(Schema.Struct({ name: Schema.optional(Schema.String) }))).toBeUndefined()
    expect(compileGuard(Schema.Record({ key: Schema.String, value: Schema.String }))).toBeUndefined()
  })

  it("stored facts read through it equal Schema's decode, and bad ones still get Schema's words", () => {
    const text = JSON.stringify(sampleFacts())
    expect(parseStoredFacts(text)).toEqual(Schema.decodeUnknownSync(Fields)(JSON.parse(text)))
    expect(parseStoredFacts(JSON.stringify({ ...sampleFacts(), handoff: "yes" }))).toContain("handoff")
    expect(
      parseStoredFacts(JSON.stringify({ ...sampleFacts(), reason: "x".repeat(MAX_REASON_LENGTH + 1) }))
    ).toContain(`at most ${MAX_REASON_LENGTH} characters`)
  })
})
