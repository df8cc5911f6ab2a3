/**
 * The `workflow` tool's parameter schema as Pi shows it to the model. Kept free of Effect so the
 * extension entry can register the tool without loading the application.
 */
import { StringEnum } from "@earendil-works/pi-ai"
import { Type } from "typebox"
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
    Type.String({ description: "submit/progress: the requestId from the workflow step message" })
  ),
  text: Type.Optional(
    Type.String({
      description: "progress: one short line for the user (at most 2 KiB); the model never sees it"
    })
  ),
  output: Type.Optional(Type.Unknown({ description: "submit: the step's output (JSON)" }))
})
