/**
 * The `workflow` tool's input: one object with an `action` field. The typebox schema
 * (`extension/tool-parameters.ts`) is what Pi shows the model; `decodeToolInput` is the authoritative
 * check (typebox validation in Pi is best-effort), returning a clear, bounded message for
 * anything malformed (`tool-bounds.ts` first refuses what no later step could even copy).
 */
import { Either, ParseResult, Schema } from "effect"
import { clipCodePoints as clip } from "../domain/text.ts"
import { count, MAX_ERROR_CHARS, quote } from "./text-bounds.ts"
import { boundToolArguments, fieldName } from "./tool-bounds.ts"

/** A string parameter; the message names what came instead, shortly (never the whole value). */
const Text = Schema.String.annotations({ message: (issue) => `must be a string, not ${quote(issue.actual)}` })

const Id = Text.pipe(
  Schema.minLength(1, { message: () => "must be a non-empty string" }),
  Schema.maxLength(512, { message: () => "must be at most 512 characters" })
)

export const ToolInput = Schema.Union(
  Schema.TaggedStruct("list", {}),
  Schema.TaggedStruct("start", { workflow: Id, input: Schema.optional(Schema.Unknown) }),
  Schema.TaggedStruct("status", { runId: Schema.optional(Id) }),
  Schema.TaggedStruct("cancel", { runId: Schema.optional(Id) }),
  Schema.TaggedStruct("submit", { requestId: Id, output: Schema.Unknown }),
  // The text's own rules (non-empty, at most 2 KiB) are checked by the notification service.
  Schema.TaggedStruct("progress", { requestId: Id, text: Text }),
  Schema.TaggedStruct("restart", { runId: Id })
)
export type ToolInput = typeof ToolInput.Type

const decode = Schema.decodeUnknownEither(ToolInput, { onExcessProperty: "error", errors: "all" })

/** Phrases an error lists before it counts the rest. */
const MAX_PHRASES = 5
/** Unknown parameter names an error lists before it counts the rest. */
const MAX_UNKNOWN_NAMES = 3
/** Longest single phrase (a schema message can quote the whole bad value). */
const MAX_PHRASE_CHARS = 200

/**
 * Decode raw tool parameters; `Left` carries a message fit to show the model as a tool error,
 * at most `MAX_ERROR_CHARS` code points whatever the input.
 */
export const decodeToolInput = (params: unknown): Either.Either<ToolInput, string> => {
  const bounded = boundToolArguments(params)
  if ("problem" in bounded) return Either.left(bounded.problem)
  const { action, fields } = bounded
  if (action === "submit" && !("output" in fields)) {
    return Either.left(`workflow submit: "output" is required`)
  }
  return Either.mapLeft(decode({ _tag: action, ...fields }), (error) =>
    clip(`workflow ${action}: ${describeIssues(error)}`, MAX_ERROR_CHARS)
  )
}

const unknownPhrase = (names: ReadonlyArray<string>): string => {
  const listed = names.slice(0, MAX_UNKNOWN_NAMES).map(fieldName)
  if (names.length === 1) return `${listed[0]} is not a parameter of this action`
  const more = names.length - listed.length
  const last = more > 0 ? count(more, "more unknown parameter", "more unknown parameters") : listed.pop()
  return `${listed.join(", ")} and ${last} are not parameters of this action`
}

/**
 * One short phrase per offending field (`workflow is missing`), not the schema's whole type:
 * the model reads this and should see at once what to change. Unknown parameters are named a
 * few at a time and counted, however many there are.
 */
const describeIssues = (error: ParseResult.ParseError): string => {
  const seen = new Set<string>()
  const phrases: Array<string> = []
  const unknown: Array<string> = []
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    if (issue._tag === "Unexpected" && issue.path.length === 1) {
      unknown.push(String(issue.path[0]))
      continue
    }
    const field = issue.path.map((key) => fieldName(String(key))).join(".")
    // A union reports one issue per member for the same field; the first says enough.
    if (seen.has(field)) continue
    seen.add(field)
    const message = issue._tag === "Unexpected" ? "is not a parameter of this action" : issue.message
    phrases.push(clip(field === "" ? message : `${field} ${message}`, MAX_PHRASE_CHARS))
  }
  const shown = phrases.slice(0, MAX_PHRASES)
  if (phrases.length > shown.length) {
    shown.push(count(phrases.length - shown.length, "more problem", "more problems"))
  }
  if (unknown.length > 0) shown.push(unknownPhrase(unknown))
  return shown.join("; ")
}
