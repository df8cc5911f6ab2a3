/**
 * `pi-workflows.deferred-turn-facts.v1`: the bounded factual payload a fallback message is built
 * from. Decoding rejects unknown fields and enforces the size bounds, so a stored row that
 * decodes is always safe to render. Stored rows are checked by the schema's own rules compiled
 * to a plain predicate (`compileGuard`, below).
 */
import { Effect, Option, ParseResult, Schema, SchemaAST as AST } from "effect"
import { InvalidFacts } from "./errors.ts"
import { clipCodePoints, fitsCodePoints } from "./text.ts"

/*
 * A Schema's own rules as one plain predicate, compiled once from its AST: for the few node
 * kinds a stored record is made of (strings, booleans, literals, unions, refinements, and a
 * struct of those), it asks what Schema's decoder asks, refinements through their own filter,
 * without the decoder's per-call result objects (~1 µs per facts record, docs/bench.md).
 * Anything else compiles to `undefined`: the caller then uses the Schema decoder itself, which
 * is also the only place an error is worded. Excess properties are the caller's check.
 */
type Check = (input: unknown) => boolean

const compile = (ast: AST.AST): Check | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return (input) => typeof input === "string"
    case "BooleanKeyword":
      return (input) => typeof input === "boolean"
    case "Literal": {
      const literal = ast.literal
      return (input) => input === literal
    }
    case "Union": {
      const members = ast.types.map(compile)
      const checks = members.filter((check) => check !== undefined)
      if (checks.length !== members.length) return undefined
      return (input) => checks.some((check) => check(input))
    }
    case "Refinement": {
      const from = compile(ast.from)
      if (from === undefined) return undefined
      return (input) => from(input) && Option.isNone(ast.filter(input, AST.defaultParseOption, ast))
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) return undefined
      const fields: Array<readonly [PropertyKey, Check]> = []
      for (const property of ast.propertySignatures) {
        const check = compile(property.type)
        if (check === undefined || property.isOptional) return undefined
        fields.push([property.name, check])
      }
      return (input) => {
        if (typeof input !== "object" || input === null) return false
        for (const [name, check] of fields) {
          if (!Object.hasOwn(input, name) || !check(Reflect.get(input, name))) return false
        }
        return true
      }
    }
    default:
      return undefined
  }
}

/**
 * `Schema.is(schema)` for a schema without transformations, as a compiled predicate; undefined
 * when the schema has a node kind this compiler does not know (use Schema's decoder then).
 */
export const compileGuard = <A>(
  schema: Schema.Schema<A, A>
): ((input: unknown) => input is A) | undefined => {
  const check = compile(schema.ast)
  return check === undefined ? undefined : (input): input is A => check(input)
}

export const FACTS_SCHEMA = "pi-workflows.deferred-turn-facts.v1"
/** The reason bound in characters, counted as Unicode code points (the spec's "characters"). */
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
  reason: Schema.NullOr(
    Schema.String.pipe(Schema.filter((reason) => fitsCodePoints(reason, MAX_REASON_LENGTH)))
  ).annotations({
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

/** The strict decode with its full error report: the only path that builds an InvalidFacts. */
const validateStrictly = (input: unknown): Effect.Effect<FallbackFacts, InvalidFacts> =>
  decodeUnknown(input).pipe(
    Effect.mapError(
      (error) => new InvalidFacts({ message: `invalid ${FACTS_SCHEMA} facts: ${describeIssues(error)}` })
    )
  )

// The hot path checks valid facts without Schema's excess-property pass, which costs ~3 µs per
// call here (docs/bench.md): own keys against the known set (Reflect.ownKeys sees what Schema's
// check sees, symbols and non-enumerable keys included), then the fields without the filter.
const FACT_KEYS: ReadonlySet<PropertyKey> = new Set(Object.keys(FactsFields.fields))
const decodeFields = Schema.decodeUnknownEither(FactsFields)
// The same rules compiled to a predicate (`compileGuard` above): a stored row is read on every store
// call; failures still go through `decodeFields`, which words them.
const isFields = compileGuard(FactsFields)

const hasOnlyFactKeys = (value: object): boolean => {
  for (const key of Reflect.ownKeys(value)) if (!FACT_KEYS.has(key)) return false
  return true
}

/** Valid facts and their JSON text, or undefined when anything is off (the caller reports it). */
const acceptFacts = (
  input: unknown
): { readonly facts: FallbackFacts; readonly json: string } | undefined => {
  if (typeof input !== "object" || input === null || !hasOnlyFactKeys(input)) return undefined
  const decoded = decodeFields(input)
  if (decoded._tag === "Left") return undefined
  const json = JSON.stringify(decoded.right)
  return Buffer.byteLength(json, "utf8") <= MAX_FACTS_BYTES ? { facts: decoded.right, json } : undefined
}

/** Validate facts from any source; the error lists every rule that failed. */
export const validateFacts = (input: unknown): Effect.Effect<FallbackFacts, InvalidFacts> =>
  Effect.suspend(() => {
    const accepted = acceptFacts(input)
    // Anything the fast check refuses goes through the strict decode, which words the error.
    return accepted === undefined ? validateStrictly(input) : Effect.succeed(accepted.facts)
  })

/** `validateFacts`, also returning the JSON text to store (the size rule already computed it). */
export const validateFactsJson = (
  input: unknown
): Effect.Effect<{ readonly facts: FallbackFacts; readonly json: string }, InvalidFacts> =>
  Effect.suspend(() => {
    const accepted = acceptFacts(input)
    return accepted === undefined
      ? Effect.map(validateStrictly(input), (facts) => ({ facts, json: encodeFactsJson(facts) }))
      : Effect.succeed(accepted)
  })

/** Facts are stored as JSON text; this schema decodes that text strictly. */
export const FallbackFactsJson = Schema.parseJson(FallbackFacts)
export const encodeFactsJson = (facts: FallbackFacts): string => JSON.stringify(facts)
export const decodeFactsJson = Schema.decodeUnknown(FallbackFactsJson, strict)

/**
 * Stored facts text to facts, as strict as `decodeFactsJson` (unknown fields, types, bounds),
 * for the store's row decoding: a plain function, with the reason as a string on failure.
 * Re-serialising decoded JSON never makes it longer, so bounding the text bounds the facts.
 */
export const parseStoredFacts = (text: string): FallbackFacts | string => {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short texts need no byte count.
  if (text.length * 3 > MAX_FACTS_BYTES && Buffer.byteLength(text, "utf8") > MAX_FACTS_BYTES)
    return `facts text exceeds ${MAX_FACTS_BYTES} bytes`
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return `facts are not JSON: ${String(error)}`
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return "facts are not an object"
  // No key array per row; JSON.parse makes only own, enumerable string keys, which `for…in` sees.
  for (const key in parsed) if (!FACT_KEYS.has(key)) return `unknown facts field ${key}`
  if (isFields?.(parsed) === true) return parsed
  const decoded = decodeFields(parsed)
  return decoded._tag === "Right" ? decoded.right : ParseResult.TreeFormatter.formatErrorSync(decoded.left)
}

/**
 * Clip free text to the reason bound (in code points, never splitting a surrogate pair),
 * keeping the start, where diagnostics usually are.
 */
export const boundReason = (text: string): string => clipCodePoints(text, MAX_REASON_LENGTH, " …[truncated]")
