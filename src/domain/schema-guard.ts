/**
 * A Schema's own rules as one plain predicate, compiled once from its AST: for the few node
 * kinds a stored record is made of (strings, booleans, literals, unions, refinements, and a
 * struct of those), it asks what Schema's decoder asks, refinements through their own filter,
 * without the decoder's per-call result objects (~1 µs per facts record, docs/bench.md).
 * Anything else compiles to `undefined`: the caller then uses the Schema decoder itself, which
 * is also the only place an error is worded. Excess properties are the caller's check.
 */
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

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
