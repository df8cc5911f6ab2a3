import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import {
  boundReason,
  decodeFactsJson,
  encodeFactsJson,
  FACTS_SCHEMA,
  type FallbackFacts,
  MAX_FACTS_BYTES,
  MAX_REASON_LENGTH,
  parseStoredFacts,
  validateFacts
} from "../../src/domain/facts.ts"
import { sampleFacts } from "../support/fixtures.ts"
import { codePointLength } from "../../src/domain/text.ts"

/** The message of the InvalidFacts error for `input`; fails the test when it validates. */
const rejection = (input: unknown): string => {
  const result = Effect.runSync(Effect.either(validateFacts(input)))
  if (Either.isRight(result)) throw new Error(`expected rejection of ${JSON.stringify(input)}`)
  expect(result.left._tag).toBe("InvalidFacts")
  return result.left.message
}

const withField = (field: string, value: unknown): Record<string, unknown> => ({
  ...sampleFacts(),
  [field]: value
})

const without = (field: keyof FallbackFacts): Record<string, unknown> => {
  const copy: Record<string, unknown> = { ...sampleFacts() }
  delete copy[field]
  return copy
}

describe("fallback facts", () => {
  it.effect("accepts the example object from the specification", () =>
    Effect.gen(function* () {
      const facts = yield* validateFacts({
        schema: "pi-workflows.deferred-turn-facts.v1",
        workflowName: "autoimplement",
        runId: "20260821T081731Z-autoimplement-407480dd",
        observedState: "failed",
        cause: "failed",
        nodeId: "$launch",
        attemptId: null,
        reason: "scope must be a non-empty string",
        handoff: false
      })
      expect(facts.runId).toBe("20260821T081731Z-autoimplement-407480dd")
    })
  )

  it("requires the exact schema value", () => {
    expect(rejection(without("schema"))).toMatch(/schema/)
    expect(rejection(withField("schema", "pi-workflows.deferred-turn-facts.v2"))).toContain(FACTS_SCHEMA)
    expect(rejection(withField("schema", FACTS_SCHEMA.toUpperCase()))).toMatch(/schema/)
  })

  it.each(["workflowName", "runId", "observedState", "cause"] as const)(
    "requires %s as a string",
    (field) => {
      expect(rejection(without(field))).toContain(field)
      expect(rejection(withField(field, null))).toContain(field)
      expect(rejection(withField(field, 7))).toContain(field)
    }
  )

  it.each(["nodeId", "attemptId", "reason"] as const)("accepts %s as a string or null only", (field) => {
    expect(Effect.runSync(validateFacts(withField(field, null)))[field]).toBeNull()
    expect(Effect.runSync(validateFacts(withField(field, "x")))[field]).toBe("x")
    expect(rejection(without(field))).toContain(field)
    expect(rejection(withField(field, 1))).toContain(field)
    expect(rejection(withField(field, undefined))).toContain(field)
  })

  it("requires handoff as a boolean", () => {
    expect(Effect.runSync(validateFacts(withField("handoff", true))).handoff).toBe(true)
    expect(rejection(without("handoff"))).toContain("handoff")
    expect(rejection(withField("handoff", "false"))).toContain("handoff")
    expect(rejection(withField("handoff", 0))).toContain("handoff")
  })

  it("bounds reason at 8,192 characters", () => {
    const atLimit = "r".repeat(MAX_REASON_LENGTH)
    expect(Effect.runSync(validateFacts(withField("reason", atLimit))).reason).toBe(atLimit)
    const message = rejection(withField("reason", `${atLimit}r`))
    expect(message).toBe(
      "invalid pi-workflows.deferred-turn-facts.v1 facts: reason: reason must be null or a string of at most 8192 characters"
    )
  })

  it("bounds the serialized object at 64 KiB", () => {
    const base = Buffer.byteLength(JSON.stringify(sampleFacts({ workflowName: "" })), "utf8")
    const fits = sampleFacts({ workflowName: "w".repeat(MAX_FACTS_BYTES - base) })
    expect(Buffer.byteLength(encodeFactsJson(fits), "utf8")).toBe(MAX_FACTS_BYTES)
    expect(Effect.runSync(validateFacts(fits)).workflowName).toBe(fits.workflowName)
    const over = sampleFacts({ workflowName: "w".repeat(MAX_FACTS_BYTES - base + 1) })
    expect(rejection(over)).toContain("serialized facts must be at most 65536 bytes")
    // Bytes, not characters: multi-byte text reaches the bound with fewer characters.
    const wide = sampleFacts({ observedState: "é".repeat(Math.ceil((MAX_FACTS_BYTES - base) / 2) + 1) })
    expect(rejection(wide)).toContain("65536 bytes")
  })

  it("rejects unknown fields and names them", () => {
    expect(rejection(withField("token", "secret"))).toMatch(/token/)
    expect(rejection(withField("extra", null))).toMatch(/extra/)
  })

  it("rejects values that are not objects", () => {
    for (const value of [null, undefined, "facts", 1, [], true]) rejection(value)
  })

  it("reports every failing rule in one clear message, field by field", () => {
    const message = rejection({ ...sampleFacts(), runId: 1, handoff: "no", surprise: true })
    expect(message).toMatch(/^invalid pi-workflows\.deferred-turn-facts\.v1 facts: /)
    expect(message).toContain("runId: Expected string, actual 1")
    expect(message).toContain('handoff: Expected boolean, actual "no"')
    expect(message).toContain("surprise: is unexpected")
    expect(rejection(null)).toBe(
      "invalid pi-workflows.deferred-turn-facts.v1 facts: Expected FallbackFacts, actual null"
    )
  })

  it.effect("decodes stored JSON strictly", () =>
    Effect.gen(function* () {
      const facts = sampleFacts()
      expect(yield* decodeFactsJson(encodeFactsJson(facts))).toEqual(facts)
      const unknownField = yield* Effect.flip(decodeFactsJson(JSON.stringify({ ...facts, env: "x" })))
      expect(unknownField.message).toContain("env")
      const notJson = yield* Effect.flip(decodeFactsJson("{"))
      expect(notJson._tag).toBe("ParseError")
    })
  )

  it("bounds free text into a valid reason without splitting characters", () => {
    expect(boundReason("short")).toBe("short")
    const clipped = boundReason("x".repeat(MAX_REASON_LENGTH * 2))
    expect(clipped.length).toBe(MAX_REASON_LENGTH)
    expect(clipped.endsWith("[truncated]")).toBe(true)
    // Place a surrogate pair across the cut point: it must be dropped whole, not halved.
    const emoji = "😀"
    const cut = MAX_REASON_LENGTH - " …[truncated]".length
    const tricky = `${"a".repeat(cut - 1)}${emoji}${"b".repeat(100)}`
    const bounded = boundReason(tricky)
    expect(codePointLength(bounded)).toBeLessThanOrEqual(MAX_REASON_LENGTH)
    expect(bounded).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
    expect(Effect.runSync(validateFacts(sampleFacts({ reason: bounded }))).reason).toBe(bounded)
  })

  it("counts the reason bound in characters (code points), as the spec does", () => {
    // 8,192 emoji are 8,192 characters but 16,384 UTF-16 code units: within the bound, kept whole.
    const emoji = "😀".repeat(MAX_REASON_LENGTH)
    expect(boundReason(emoji)).toBe(emoji)
    expect(Effect.runSync(validateFacts(sampleFacts({ reason: emoji }))).reason).toBe(emoji)
    expect(parseStoredFacts(JSON.stringify(sampleFacts({ reason: emoji })))).toMatchObject({ reason: emoji })
    // One more character is over it: clipped to exactly the bound, no surrogate halved.
    const over = boundReason(`${emoji}😀`)
    expect(codePointLength(over)).toBe(MAX_REASON_LENGTH)
    expect(over.endsWith(" …[truncated]")).toBe(true)
    expect(over).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
    expect(Effect.runSync(Effect.either(validateFacts(sampleFacts({ reason: `${emoji}😀` }))))._tag).toBe(
      "Left"
    )
  })
})

const text = (maxLength: number) =>
  fc.oneof(fc.string({ maxLength }), fc.string({ unit: "grapheme", maxLength }))
const nullable = (maxLength: number) => fc.option(text(maxLength), { nil: null })

/** Valid facts: bounded strings, so the 64 KiB rule never trips. */
const validFacts: fc.Arbitrary<FallbackFacts> = fc.record({
  schema: fc.constant(FACTS_SCHEMA),
  workflowName: text(64),
  runId: text(64),
  observedState: text(32),
  cause: text(32),
  nodeId: nullable(64),
  attemptId: nullable(64),
  reason: fc.option(fc.oneof(text(512), fc.string({ unit: "binary", maxLength: 64 })), { nil: null }),
  handoff: fc.boolean()
})

describe("fallback facts properties", () => {
  it("valid facts round-trip through the stored JSON form", () => {
    fc.assert(
      fc.property(validFacts, (facts) => {
        const validated = Effect.runSync(validateFacts(facts))
        const stored = encodeFactsJson(validated)
        expect(Effect.runSync(decodeFactsJson(stored))).toEqual(facts)
        // Encoding is deterministic, so a second round trip stores the same text.
        expect(encodeFactsJson(Effect.runSync(decodeFactsJson(stored)))).toBe(stored)
      }),
      { numRuns: 300 }
    )
  })

  it("any added field is rejected", () => {
    const known = new Set(Object.keys(sampleFacts()))
    const extraKey = fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((k) => !known.has(k) && k !== "__proto__")
    fc.assert(
      fc.property(validFacts, extraKey, fc.jsonValue(), (facts, key, value) => {
        const input = { ...facts, [key]: value }
        expect(Either.isLeft(Effect.runSync(Effect.either(validateFacts(input))))).toBe(true)
      }),
      { numRuns: 200 }
    )
  })

  it("any reason longer than the bound is rejected", () => {
    fc.assert(
      fc.property(validFacts, fc.integer({ min: 1, max: 2_000 }), (facts, extra) => {
        const input = { ...facts, reason: "z".repeat(MAX_REASON_LENGTH + extra) }
        expect(Either.isLeft(Effect.runSync(Effect.either(validateFacts(input))))).toBe(true)
      }),
      { numRuns: 50 }
    )
  })
})
