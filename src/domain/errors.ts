/**
 * Typed errors of the domain and its operations (the stores' own failures are in
 * src/store/store-errors.ts). Each carries enough context to act on
 * without reading a stack trace; none of them means that something durable changed. Below them,
 * Schema failures in the user's words (`readableIssues`, `exampleOf`).
 */
import { Option, type ParseResult, Schema, SchemaAST } from "effect"

/** A caller-supplied value is outside its bounds (empty ID, over-long ID, bad limit, bad lease). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  field: Schema.String,
  message: Schema.String
}) {}

/** Fallback facts failed the `pi-workflows.deferred-turn-facts.v1` rules. */
export class InvalidFacts extends Schema.TaggedError<InvalidFacts>()("InvalidFacts", {
  message: Schema.String
}) {}

/** The same deterministic ID was reused with different immutable facts. */
export class IdentityCollision extends Schema.TaggedError<IdentityCollision>()("IdentityCollision", {
  intentId: Schema.String,
  fields: Schema.Array(Schema.String)
}) {
  override get message() {
    return `turn intent ${this.intentId} already exists with different ${this.fields.join(", ")}`
  }
}

/** No intent with this ID exists. */
export class IntentNotFound extends Schema.TaggedError<IntentNotFound>()("IntentNotFound", {
  intentId: Schema.String
}) {
  override get message() {
    return `turn intent ${this.intentId} does not exist`
  }
}

/**
 * The caller's claim token does not hold a live claim: it expired, another claimant took
 * the intent, or the intent was already resolved.
 */
export class ClaimNotHeld extends Schema.TaggedError<ClaimNotHeld>()("ClaimNotHeld", {
  intentId: Schema.String,
  reason: Schema.Literal("notClaimed", "otherClaimant", "expired", "resolved")
}) {
  override get message() {
    return `claim on turn intent ${this.intentId} is not held (${this.reason})`
  }
}

/*
 * Schema failures in the user's words: one short phrase per offending field ("task is missing",
 * "task must be a string at least 1 character(s) long (got \"\")") instead of the schema's own
 * syntax ("Expected { readonly task: minLength(1) & … }, actual null"), and an example value a
 * struct schema accepts, for the "a correct call looks like …" line. Pure.
 */
const MAX_PHRASES = 5
const MAX_ACTUAL = 40

const shown = (actual: unknown): string => {
  const text = actual === undefined ? "nothing" : (JSON.stringify(actual) ?? String(actual))
  return text.length <= MAX_ACTUAL ? text : `${text.slice(0, MAX_ACTUAL - 1)}…`
}

/** What a value of this AST is, in a few words ("a string", "an object"). */
export const describeAst = (ast: SchemaAST.AST): string => {
  const described = SchemaAST.getDescriptionAnnotation(ast)
  if (Option.isSome(described)) return described.value
  switch (ast._tag) {
    case "TypeLiteral":
      return "an object"
    case "TupleType":
      return "an array"
    case "Literal":
      return JSON.stringify(ast.literal) ?? String(ast.literal)
    case "Union":
      return `one of ${ast.types.map(describeAst).join(", ")}`
    case "Refinement":
      return describeAst(ast.from)
    case "Transformation":
      return describeAst(ast.to)
    case "Suspend":
      return describeAst(ast.f())
    default:
      return "a valid value"
  }
}

const at = (path: ReadonlyArray<PropertyKey>, root: string): string =>
  path.length === 0 ? root : path.map(String).join(".")

/** The phrases of one issue tree; `root` names the whole value ("input"). */
const phrases = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, root: string): string[] => {
  switch (issue._tag) {
    case "Pointer":
      return phrases(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])], root)
    case "Missing":
      return [`${at(path, root)} is missing`]
    case "Unexpected":
      return [`${at(path, root)} is not an allowed field`]
    case "Forbidden":
      return [`${at(path, root)} cannot be checked here`]
    case "Composite":
      // A union reports each member's failure; the whole union's description says enough.
      if (issue.ast._tag === "Union")
        return [`${at(path, root)} must be ${describeAst(issue.ast)} (got ${shown(issue.actual)})`]
      return (Array.isArray(issue.issues) ? issue.issues : [issue.issues]).flatMap((inner) =>
        phrases(inner, path, root)
      )
    case "Refinement":
      if (issue.kind === "From") return phrases(issue.issue, path, root)
      return [`${at(path, root)} must be ${describeAst(issue.ast)} (got ${shown(issue.actual)})`]
    case "Transformation":
      return phrases(issue.issue, path, root)
    case "Type":
      return [
        issue.message ?? `${at(path, root)} must be ${describeAst(issue.ast)} (got ${shown(issue.actual)})`
      ]
  }
}

/** "task is missing; plan must be a string (got 5)": at most five phrases, the rest counted. */
export const readableIssues = (error: ParseResult.ParseError, root = "the value"): string => {
  const all = [...new Set(phrases(error.issue, [], root))]
  const kept = all.slice(0, MAX_PHRASES)
  const more = all.length - kept.length
  return more > 0 ? `${kept.join("; ")}; and ${more} more` : kept.join("; ")
}

/**
 * A value of `ast` good enough to show as a template: required fields only, strings as "…".
 * Null when the schema is not one a short example can show.
 */
export const exampleOf = (ast: SchemaAST.AST): unknown => {
  switch (ast._tag) {
    case "StringKeyword":
    case "TemplateLiteral":
      return "…"
    case "NumberKeyword":
      return 1
    case "BooleanKeyword":
      return true
    case "Literal":
      return ast.literal
    case "Refinement":
      return exampleOf(ast.from)
    case "Transformation":
      return exampleOf(ast.from)
    case "Union":
      return ast.types.length > 0 ? exampleOf(ast.types[0] as SchemaAST.AST) : null
    case "TupleType":
      return []
    case "TypeLiteral": {
      const out: Record<string, unknown> = {}
      for (const property of ast.propertySignatures) {
        if (property.isOptional || typeof property.name !== "string") continue
        out[property.name] = exampleOf(property.type)
      }
      return out
    }
    default:
      return null
  }
}
