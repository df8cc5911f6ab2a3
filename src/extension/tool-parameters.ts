/**
 * The `workflow` tool's parameter schema as Pi shows it to the model, and the argument
 * preparation Pi runs before it validates a call. Kept free of Effect so the extension entry can
 * register the tool without loading the application.
 */
import { StringEnum } from "@earendil-works/pi-ai"
import { type Static, Type } from "typebox"
import { quote, boundToolArguments } from "../app/input-bounds.ts"
import { redactText } from "../domain/redact.ts"
import { TOOL_ACTIONS } from "../domain/message-types.ts"

export { TOOL_ACTIONS }

export const toolParameters = Type.Object({
  action: StringEnum(TOOL_ACTIONS, { description: "What to do" }),
  workflow: Type.Optional(Type.String({ description: "start: the workflow name (see action list)" })),
  input: Type.Optional(Type.Unknown({ description: "start: the workflow input (JSON)" })),
  runId: Type.Optional(
    Type.String({
      description:
        "status/cancel: the run (defaults to this session's active run); restart: the ended run to run again"
    })
  ),
  requestId: Type.Optional(
    Type.String({
      description: "submit/progress/answer: the requestId from the workflow step or waiting message"
    })
  ),
  text: Type.Optional(
    Type.String({
      description: "progress: one short line for the user (at most 2 KiB); the model never sees it"
    })
  ),
  output: Type.Optional(Type.Unknown({ description: "submit: the step's output (JSON)" })),
  answer: Type.Optional(
    Type.Unknown({ description: "answer: the answer to a waiting workflow's question (JSON)" })
  )
})

export type ToolParameters = Static<typeof toolParameters>

/** The parameters Pi checks as strings; an array or object there fails its validation. */
const STRING_PARAMETERS = Object.entries(toolParameters.properties).flatMap(([key, schema]) =>
  key !== "action" && "type" in schema && schema.type === "string" ? [key] : []
)

/** Why Pi's own validation would refuse these arguments (it echoes all of them), or null. */
export const preparationProblem = (args: unknown): string | null => {
  const bounded = boundToolArguments(args)
  if ("problem" in bounded) return bounded.problem
  for (const key of STRING_PARAMETERS) {
    const value = bounded.fields[key]
    if (typeof value === "object" && value !== null) {
      return `workflow ${bounded.action}: ${key} must be a string, not ${quote(value)}`
    }
  }
  return null
}

/**
 * Pi's argument preparation, run before its validation. Pi's validation error repeats every
 * argument (a 5 MB `action` came back as a 5 MB tool error) and its copy of the arguments
 * overflows the stack on deeply nested JSON; so what it would refuse, and what it could not
 * copy, is refused here with the application's bounded message, which Pi returns as the tool
 * error. Anything else passes unchanged to Pi's validation and then to `decodeToolInput`.
 */
export const prepareToolArguments = (args: unknown): ToolParameters => {
  const problem = preparationProblem(args)
  // Pi shows this message to the model as the tool error: it passes the one redactor too.
  if (problem !== null) throw new Error(redactText(problem))
  // Pi validates this against `toolParameters` next; the checks above only keep that
  // validation from failing unboundedly.
  return args as ToolParameters
}
