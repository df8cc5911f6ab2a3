/**
 * JSON data rules for workflow input and node outputs: plain JSON values only (so they survive
 * a round trip through SQLite unchanged), bounded in size, compared canonically.
 */
import { Either, Schema } from "effect"
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeep } from "../domain/text.ts"
import { readableIssues } from "../domain/errors.ts"
import type { JsonCheck } from "./definition.ts"

/** Largest serialized input or output the engine stores. */
export const MAX_JSON_BYTES = 1024 * 1024

const problemAt = (value: unknown, path: string, seen: Set<object>): string | null => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return null
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path} is not a finite number`
  if (typeof value !== "object") return `${path} is ${typeof value}, which JSON cannot hold`
  if (seen.has(value)) return `${path} is a circular reference`
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = problemAt(value[i], `${path}[${i}]`, seen)
        if (problem !== null) return problem
      }
      return null
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return `${path} is not a plain object`
    for (const [key, item] of Object.entries(value)) {
      const problem = problemAt(item, `${path}.${key}`, seen)
      if (problem !== null) return problem
    }
    return null
  } finally {
    seen.delete(value)
  }
}

/**
 * `jsonProblem` for JSON a model or a user sent (run input, step output), which must also nest at
 * most `MAX_JSON_DEPTH` levels: checked first, iteratively, so the recursive checks after it
 * (and every serialization downstream) cannot overflow the stack.
 */
export const sentJsonProblem = (value: unknown, label: string): string | null =>
  nestsDeeperThan(value, MAX_JSON_DEPTH) ? tooDeep(label) : jsonProblem(value, label)

/** Null when `value` is plain JSON within the size bound, else the first problem found. */
export const jsonProblem = (value: unknown, label = "value"): string | null => {
  const problem = problemAt(value, label, new Set())
  if (problem !== null) return problem
  const bytes = Buffer.byteLength(JSON.stringify(value), "utf8")
  return bytes > MAX_JSON_BYTES ? `${label} is ${bytes} bytes; at most ${MAX_JSON_BYTES} are allowed` : null
}

/** JSON text with object keys sorted, so equal data always gives equal text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, item: unknown) =>
    typeof item === "object" && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item
  )

/** A loaded check: null when the value passes, else the problem. */
export type Check = (value: unknown) => string | null

/**
 * Turn an author's check (function or Effect Schema) into one calling convention. A schema's
 * failure is told in plain words, naming the value as `root` ("the input", "the output").
 */
export const toCheck = (check: JsonCheck, root = "the value"): Check => {
  if (Schema.isSchema(check)) {
    const decode = Schema.decodeUnknownEither(check)
    return (value) =>
      Either.match(decode(value, { errors: "all" }), {
        onLeft: (error) => readableIssues(error, root),
        onRight: () => null
      })
  }
  return (value) => {
    try {
      const verdict = check(value)
      if (verdict === true) return null
      return typeof verdict === "string" && verdict.length > 0 ? verdict : "the check rejected the value"
    } catch (error) {
      return `the check threw: ${error instanceof Error ? error.message : String(error)}`
    }
  }
}
