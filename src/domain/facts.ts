/**
 * `pi-workflows.deferred-turn-facts.v1`: the bounded factual payload a fallback message is built
 * from. Decoding rejects unknown fields and enforces the size bounds, so a stored row that
 * decodes is always safe to render.
 */
import { Effect, ParseResult, Schema } from "effect"
import { InvalidFacts } from "./errors.ts"

export const FACTS_SCHEMA = "pi-workflows.deferred-turn-facts.v1"
export const MAX_REASON_LENGTH = 8_192
export const MAX_FACTS_BYTES = 64 * 1024

const FactsFields = Schema.Struct({
  schema: Schema.Literal(FACTS_SCHEMA),
  workflowName: Schema.String,
  runId: Schema.String,
  observedState: Schema.String,
  cause: Schema.String,
  nodeId: Schema.NullOr(Schema.String),
  attemptId: Schema.NullOr(Schema.String),
  // One message for the whole union, so a rejected reason is never echoed back in the error.
  reason: Schema.NullOr(Schema.String.pipe(Schema.maxLength(MAX_REASON_LENGTH))).annotations({
    message: () => ({
      message: `reason must be null or a string of at most ${MAX_REASON_LENGTH} characters`,
      override: true
    })
  }),
  handoff: Schema.Boolean
}).annotations({ identifier: "FallbackFacts" })

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), "utf8")

export const FallbackFacts = FactsFields.pipe(
  Schema.filter((facts) =>
    byteLength(facts) <= MAX_FACTS_BYTES ? true : `serialized facts must be at most ${MAX_FACTS_BYTES} bytes`
  )
)
export type FallbackFacts = typeof FallbackFacts.Type

const strict = { onExcessProperty: "error", errors: "all" } as const
const decodeUnknown = Schema.decodeUnknown(FallbackFacts, strict)

/** One line per failed rule, each prefixed with the field it concerns. */
const describeIssues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.join(".")}: ${issue.message}`))
    .join("; ")

/** Validate facts from any source; the error lists every rule that failed. */
export const validateFacts = (input: unknown): Effect.Effect<FallbackFacts, InvalidFacts> =>
  decodeUnknown(input).pipe(
    Effect.mapError(
      (error) => new InvalidFacts({ message: `invalid ${FACTS_SCHEMA} facts: ${describeIssues(error)}` })
    )
  )

/** Facts are stored as JSON text; this schema decodes that text strictly. */
export const FallbackFactsJson = Schema.parseJson(FallbackFacts)
export const encodeFactsJson = (facts: FallbackFacts): string => JSON.stringify(facts)
export const decodeFactsJson = Schema.decodeUnknown(FallbackFactsJson, strict)

/** Clip free text to the reason bound, keeping the start (where diagnostics usually are). */
export const boundReason = (text: string): string => {
  if (text.length <= MAX_REASON_LENGTH) return text
  const marker = " …[truncated]"
  let end = MAX_REASON_LENGTH - marker.length
  // Do not cut a surrogate pair in half: a lone surrogate would garble the rendered reason.
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${text.slice(0, end)}${marker}`
}
