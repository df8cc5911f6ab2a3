/** Schema failures told in plain words, one phrase per field, and the example a schema accepts. */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { exampleOf, readableIssues } from "../../src/domain/errors.ts"

const Input = Schema.Struct({
  task: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(20_000)),
  plan: Schema.optional(Schema.String),
  mode: Schema.Literal("fast", "careful"),
  retries: Schema.Number
})

const problem = (value: unknown): string => {
  const decoded = Schema.decodeUnknownEither(Input, { errors: "all", onExcessProperty: "error" })(value)
  if (Either.isRight(decoded)) throw new Error("expected a failure")
  return readableIssues(decoded.left, "the input")
}

describe("readableIssues", () => {
  it("says what is wrong with each field, never in the schema's syntax", () => {
    expect(problem(null)).toBe("the input must be an object (got null)")
    expect(problem({ task: "", mode: "slow", retries: "2", extra: 1 })).toBe(
      [
        "extra is not an allowed field",
        'task must be a string at least 1 character(s) long (got "")',
        'mode must be one of "fast", "careful" (got "slow")',
        'retries must be a number (got "2")'
      ].join("; ")
    )
    expect(problem({ mode: "fast", retries: 1 })).toBe("task is missing")
    for (const text of [problem(null), problem({})]) {
      expect(text).not.toMatch(/Expected|readonly|minLength\(|actual/)
    }
  })

  it("bounds the phrases and the values it quotes", () => {
    const Wide = Schema.Struct(
      Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`f${i}`, Schema.String]))
    )
    const decoded = Schema.decodeUnknownEither(Wide, { errors: "all" })({})
    if (Either.isRight(decoded)) throw new Error("expected a failure")
    expect(readableIssues(decoded.left)).toBe(
      "f0 is missing; f1 is missing; f2 is missing; f3 is missing; f4 is missing; and 4 more"
    )
    const long = problem({ task: 7, mode: "fast", retries: 1, plan: "x".repeat(500) })
    expect(long).toBe("task must be a string (got 7)")
    expect(problem({ task: "ok", mode: "x".repeat(500), retries: 1 }).length).toBeLessThan(120)
  })
})

describe("exampleOf", () => {
  it("shows the required fields a schema accepts", () => {
    expect(exampleOf(Input.ast)).toEqual({ task: "…", mode: "fast", retries: 1 })
    expect(Schema.decodeUnknownEither(Input)(exampleOf(Input.ast))._tag).toBe("Right")
    expect(exampleOf(Schema.Unknown.ast)).toBeNull()
  })
})
