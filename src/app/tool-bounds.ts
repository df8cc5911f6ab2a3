/**
 * The first check of raw `workflow` tool arguments, before anything copies, validates or
 * serializes them: they are an object, name a known action, and no field nests deeper than
 * `MAX_JSON_DEPTH` arrays and objects (src/domain/text.ts). Free of Effect: the extension
 * entry runs it in Pi's argument preparation, before the application loads; `decodeToolInput`
 * runs it again.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeep, clipCodePoints as clip } from "../domain/text.ts"
import { TOOL_ACTIONS } from "../domain/message-types.ts"
import { MAX_ERROR_CHARS, quote } from "./text-bounds.ts"

const ACTIONS = `one of ${TOOL_ACTIONS.join(", ")}`

/** A parameter name as the model wrote it: plain when short and simple, else quoted and cut. */
export const fieldName = (key: string): string => (/^[A-Za-z_][\w-]{0,39}$/.test(key) ? key : quote(key))

/** Raw arguments that name an action and are within the depth bound. */
export interface BoundedArguments {
  readonly action: (typeof TOOL_ACTIONS)[number]
  /** Every argument but `action`, as given. */
  readonly fields: Readonly<Record<string, unknown>>
}

const isAction = (value: unknown): value is BoundedArguments["action"] =>
  typeof value === "string" && (TOOL_ACTIONS as ReadonlyArray<string>).includes(value)

/**
 * The action and fields of raw tool arguments, or why they cannot be an action at all: one
 * bounded line.
 */
export const boundToolArguments = (params: unknown): BoundedArguments | { readonly problem: string } => {
  if (typeof params !== "object" || params === null || Array.isArray(params) || !("action" in params)) {
    return { problem: `workflow: "action" is required (${ACTIONS})` }
  }
  const { action, ...fields } = params
  if (!isAction(action)) return { problem: `workflow: unknown action ${quote(action)} (${ACTIONS})` }
  for (const [key, value] of Object.entries(fields)) {
    if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
      const problem = `workflow ${action}: ${tooDeep(fieldName(key))}, so send flatter JSON`
      return { problem: clip(problem, MAX_ERROR_CHARS) }
    }
  }
  return { action, fields }
}
