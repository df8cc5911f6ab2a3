/**
 * The `workflow` tool's input: one object with an `action` field. The typebox schema
 * (`extension/tool-parameters.ts`) is what Pi shows the model; `decodeToolInput` is the authoritative
 * check (typebox validation in Pi is best-effort), returning a clear message for anything
 * malformed.
 */
import { Either, ParseResult, Schema } from "effect"
import { TOOL_ACTIONS } from "../domain/message-types.ts"

const Id = Schema.String.pipe(
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
  Schema.TaggedStruct("progress", { requestId: Id, text: Schema.String }),
  Schema.TaggedStruct("restart", { runId: Id })
)
export type ToolInput = typeof ToolInput.Type

const decode = Schema.decodeUnknownEither(ToolInput, { onExcessProperty: "error", errors: "all" })

/** Decode raw tool parameters; `Left` carries a message fit to show the model as a tool error. */
export const decodeToolInput = (params: unknown): Either.Either<ToolInput, string> => {
  if (typeof params !== "object" || params === null || !("action" in params)) {
    return Either.left(`workflow: "action" is required (one of ${TOOL_ACTIONS.join(", ")})`)
  }
  const { action, ...rest } = params
  if (typeof action !== "string" || !(TOOL_ACTIONS as ReadonlyArray<string>).includes(action)) {
    return Either.left(
      `workflow: unknown action ${JSON.stringify(action)} (one of ${TOOL_ACTIONS.join(", ")})`
    )
  }
  if (action === "submit" && !("output" in rest)) {
    return Either.left(`workflow submit: "output" is required`)
  }
  return Either.mapLeft(
    decode({ _tag: action, ...rest }),
    (error) => `workflow ${action}: ${describeIssues(error)}`
  )
}

/**
 * One short phrase per offending field (`workflow is missing`), not the schema's whole type:
 * the model reads this and should see at once what to change.
 */
const describeIssues = (error: ParseResult.ParseError): string => {
  const seen = new Set<string>()
  const phrases: Array<string> = []
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const field = issue.path.map(String).join(".")
    // A union reports one issue per member for the same field; the first says enough.
    if (seen.has(field)) continue
    seen.add(field)
    const message = issue._tag === "Unexpected" ? "is not a parameter of this action" : issue.message
    phrases.push(field === "" ? message : `${field} ${message}`)
  }
  return phrases.join("; ")
}
