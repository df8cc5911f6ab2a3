/**
 * The first check of raw `workflow` tool arguments, before anything copies, validates or
 * serializes them: they are an object, name a known action, and no field nests deeper than
 * `MAX_JSON_DEPTH` arrays and objects. Deeper JSON would overflow the stack of every recursive
 * copy (Pi's argument validation clones the arguments, JSON.stringify recurses), so it is
 * refused here by an iterative walk. Free of Effect: the extension entry runs it in Pi's
 * argument preparation, before the application loads; `decodeToolInput` runs it again.
 */
import { TOOL_ACTIONS } from "../domain/message-types.ts"
import { clip, MAX_ERROR_CHARS, quote } from "./text-bounds.ts"

/** Deepest nesting of arrays and objects a tool argument may have (`{}` is 1, `{"a": {}}` is 2). */
export const MAX_JSON_DEPTH = 64

const ACTIONS = `one of ${TOOL_ACTIONS.join(", ")}`

/** A parameter name as the model wrote it: plain when short and simple, else quoted and cut. */
export const fieldName = (key: string): string => (/^[A-Za-z_][\w-]{0,39}$/.test(key) ? key : quote(key))

/** True when `value` holds arrays or objects nested deeper than `limit`. Iterative; stops early. */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next.value !== "object" || next.value === null) continue
    const depth = next.depth + 1
    if (depth > limit) return true
    const items = Array.isArray(next.value) ? next.value : Object.values(next.value)
    for (const item of items) {
      if (typeof item === "object" && item !== null) stack.push({ value: item, depth })
    }
  }
  return false
}

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
      const problem =
        `workflow ${action}: ${fieldName(key)} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep; ` +
        `at most ${MAX_JSON_DEPTH} levels are accepted, so send flatter JSON`
      return { problem: clip(problem, MAX_ERROR_CHARS) }
    }
  }
  return { action, fields }
}
